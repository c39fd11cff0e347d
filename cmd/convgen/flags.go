package main

import (
	"errors"
	"fmt"
	"go/token"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

var errHelp = errors.New("help requested")

// config is the parsed command line.
type config struct {
	problem   problem.Problem
	out       string
	pkg       string
	cache     string
	arch      string
	device    string
	retune    bool
	trials    int
	budget    time.Duration
	compileTO time.Duration // gives up on one candidate's NVRTC compile after this
	seed      uint64
	jobs      int
	runs      int
	pin       []string
	quiet     bool
	compile   bool   // compile the search space for -arch and stop
	sourceDir string // with compile: where to write each compiled candidate's CUDA source
	shapeText string
	// tuningSet names the tuning flags given on the command line (they
	// have no effect when the package is replayed from the cache).
	tuningSet []string
}

// tuningFlags only matter when convgen tunes.
var tuningFlags = []string{"trials", "time", "seed", "jobs", "runs", "compile-timeout"}

var archPattern = regexp.MustCompile(`^sm_[0-9]{2,3}a?$`)

// onceString is a string flag that may be given once: a second value is a
// usage error instead of silently replacing the first.
type onceString struct {
	value *string
	set   bool
}

func (o *onceString) String() string { return *o.value }
func (o *onceString) Type() string   { return "string" }

func (o *onceString) Set(s string) error {
	if o.set {
		return fmt.Errorf("given twice (first %q)", *o.value)
	}
	*o.value, o.set = s, true
	return nil
}

// once registers a string flag with its default that may be given once.
func once(fs *pflag.FlagSet, p *string, name, short, def, usage string) {
	*p = def
	fs.VarP(&onceString{value: p}, name, short, usage)
}

// parseFlags parses the command line; help goes to stdout (errHelp), and
// nothing is printed on an error (the caller prints it).
func parseFlags(args []string, stdout io.Writer) (config, error) {
	var c config
	var precision, layout string
	fs := pflag.NewFlagSet("convgen", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	once(fs, &c.shapeText, "shape", "", "", "the convolution, as KEY=VALUE pairs: N,C,H,W,K,R,S required; stride, pad, dilation (also _h/_w), groups, bias optional")
	once(fs, &precision, "precision", "", "fp32", "arithmetic: fp32, tf32, 3xtf32, fp16 or bf16")
	once(fs, &layout, "layout", "", "nchw", "input/output layout: nchw (filter KCRS) or nhwc (filter KRSC)")
	once(fs, &c.out, "out", "o", "", "directory of the generated package (written atomically)")
	once(fs, &c.pkg, "pkg", "", "", "package name (default: the output directory's name)")
	once(fs, &c.cache, "cache", "", "convgen-cache.json", "tuning cache file: read for replay, written after tuning")
	once(fs, &c.arch, "arch", "", "", "target arch when replaying without a GPU, e.g. sm_90 (default: any record)")
	once(fs, &c.device, "device", "", "", "device name to pick among cache records when replaying without a GPU")
	fs.BoolVar(&c.retune, "retune", false, "tune even when the cache has a matching record (needs a GPU)")
	fs.IntVar(&c.trials, "trials", 64, "candidates to measure at most (0: every candidate)")
	fs.DurationVar(&c.budget, "time", 15*time.Minute, "tuning time budget (0: none)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the candidate sampling and of the check inputs")
	fs.IntVar(&c.jobs, "jobs", 0, "concurrent NVRTC compiles (0: the number of CPUs)")
	fs.DurationVar(&c.compileTO, "compile-timeout", autotune.DefaultCompileTimeout, "give up on a candidate whose NVRTC compile takes longer (recorded as a compile failure)")
	fs.IntVar(&c.runs, "runs", 30, "timed runs per candidate, at least 20 (the median is kept)")
	fs.StringArrayVar(&c.pin, "pin", nil, "measure (with -compile-only: compile) only this candidate ID (family/knobs, as in the report); repeat for several; a pinned run always tunes and is not saved to the cache")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no progress output on stderr (the result lines on stdout stay)")
	fs.BoolVar(&c.compile, "compile-only", false, "render and NVRTC-compile every candidate (or only the -pin ones) for -arch (default sm_90) on the CPU, print their resources, write nothing but -source-dir (no GPU needed; -o not required)")
	once(fs, &c.sourceDir, "source-dir", "", "", "with -compile-only: also write the CUDA source of each candidate compiled (or failing to) to this directory as KERNEL.cu")
	help := fs.BoolP("help", "h", false, "show this help (on stdout)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: convgen -shape N=..,C=..,H=..,W=..,K=..,R=..,S=.. -o DIR [flags]\n\nFlags (one dash or two; string flags given once, -pin repeatable):\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(longDashes(args, fs)); err != nil {
		return c, usageError{err}
	}
	if *help {
		fs.Usage()
		return c, errHelp
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected argument %q (flags are -name value)", fs.Arg(0))}
	}
	if c.shapeText == "" {
		return c, usageError{errors.New("-shape is required, e.g. -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")}
	}
	shape, err := problem.ParseShape(c.shapeText)
	if err != nil {
		return c, usageError{err}
	}
	c.problem.Shape = shape
	if c.problem.Precision, err = problem.ParsePrecision(precision); err != nil {
		return c, usageError{fmt.Errorf("-precision: %w", err)}
	}
	if c.problem.Layout, err = problem.ParseLayout(layout); err != nil {
		return c, usageError{fmt.Errorf("-layout: %w", err)}
	}
	if err := kernels.Serves(c.problem); err != nil {
		return c, usageError{err}
	}
	if c.sourceDir != "" && !c.compile {
		return c, usageError{errors.New("-source-dir needs -compile-only (the sources of the compiled candidates)")}
	}
	if c.out == "" && !c.compile {
		return c, usageError{errors.New("-o DIR is required: the directory of the generated package")}
	}
	if c.pkg == "" && c.out != "" {
		if c.pkg = packageName(filepath.Base(filepath.Clean(c.out))); c.pkg == "" && !c.compile {
			return c, usageError{fmt.Errorf("-o %s: no package name can be derived from the directory's name; give one with -pkg", c.out)}
		}
	}
	for _, f := range tuningFlags {
		if fs.Changed(f) {
			c.tuningSet = append(c.tuningSet, "-"+f)
		}
	}
	if !c.compile && (!token.IsIdentifier(c.pkg) || token.IsKeyword(c.pkg) || c.pkg == "main" || c.pkg == "_" || c.pkg == "C") {
		return c, usageError{fmt.Errorf("-pkg %q is not a valid Go package name", c.pkg)}
	}
	if c.arch != "" && !archPattern.MatchString(c.arch) {
		return c, usageError{fmt.Errorf("-arch %q: want sm_XY, e.g. sm_90", c.arch)}
	}
	if c.trials < 0 {
		return c, usageError{fmt.Errorf("-trials %d: must be 0 (all) or positive", c.trials)}
	}
	if c.budget < 0 {
		return c, usageError{fmt.Errorf("-time %s: must not be negative", c.budget)}
	}
	if c.compileTO <= 0 {
		return c, usageError{fmt.Errorf("-compile-timeout %s: must be positive", c.compileTO)}
	}
	if c.runs < 20 {
		return c, usageError{fmt.Errorf("-runs %d: at least 20 timed runs are needed for a median", c.runs)}
	}
	if c.jobs < 0 {
		return c, usageError{fmt.Errorf("-jobs %d: must be 0 (all CPUs) or positive", c.jobs)}
	}
	if c.cache == "" {
		return c, usageError{errors.New("-cache must name a file")}
	}
	return c, nil
}

// longDashes turns -name into --name for every long flag the set knows, so
// that both spellings work (pflag reads -abc as three shorthands).
func longDashes(args []string, fs *pflag.FlagSet) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			if fs.Lookup(name) != nil {
				a = "-" + a
			}
		}
		out = append(out, a)
	}
	return out
}

// packageName derives a package name from a directory name.
func packageName(dir string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(dir) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// command is the canonical command line that regenerates the package: it
// depends only on the flags that change the output.
func (c config) command() string {
	parts := []string{"convgen", "-shape", c.problem.Shape.String(),
		"-precision", string(c.problem.Precision), "-layout", string(c.problem.Layout),
		"-pkg", c.pkg, "-o", filepath.ToSlash(c.out), "-cache", filepath.ToSlash(c.cache)}
	if c.arch != "" {
		parts = append(parts, "-arch", c.arch)
	}
	if c.device != "" {
		parts = append(parts, "-device", c.device)
	}
	if len(c.pin) > 0 { // a pinned run: it tunes, and its record is not cached
		parts = append(parts, "-retune")
	}
	for _, pin := range c.pin {
		parts = append(parts, "-pin", pin)
	}
	for i, p := range parts {
		if strings.ContainsAny(p, " \t'\"$`\\") {
			parts[i] = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	return strings.Join(parts, " ")
}
