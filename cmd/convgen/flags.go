package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/epilogue"
	"github.com/convgen/convgen/gen"
	"github.com/convgen/convgen/gen/torchmod"
	"github.com/convgen/convgen/internal/clip"
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
	list      bool   // print the candidate IDs for -arch and stop
	reportDir string // where the reports go instead of the package
	torch     string // where the PyTorch module goes, beside the package ("" none)
	untuned   bool   // without a GPU and a record: write an untuned package
	into      bool   // -o .: convgen's files go among the user's (gen.WriteInto)
	train     bool   // the training package: the three ops' kernels in one package (pipeline.RunTrain)
	verbose   bool   // with list: the rejected candidates too, with their reasons
	shapeText string
	// transposed says that -op transposed read -shape as ConvTranspose2d's
	// and set the problem to the data gradient that computes it.
	transposed bool
	// tuningSet names the tuning flags given on the command line (they
	// have no effect when the package is replayed from the cache).
	tuningSet []string
}

// tuningFlags only matter when convgen tunes.
// transposedOp is -op's name for a transposed convolution (ConvTranspose2d),
// which convgen computes with the data gradient's kernels
// (problem.Transposed.Dgrad).
const transposedOp = "transposed"

var tuningFlags = []string{"trials", "time", "seed", "jobs", "runs", "compile-timeout"}

var archPattern = regexp.MustCompile(`^sm_[0-9]{2,3}a?$`)

// minArch is the oldest compute capability convgen's kernels serve (the
// fallback's PTX is compute_80).
const minArch = 80

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
		return fmt.Errorf("given twice (first %s)", clip.Quote(*o.value))
	}
	*o.value, o.set = s, true
	return nil
}

// once registers a string flag with its default that may be given once.
func once(fs *pflag.FlagSet, p *string, name, short, def, usage string) {
	*p = def
	fs.VarP(&onceString{value: p}, name, short, usage)
}

// maxErrorLen bounds the text of every error parseFlags returns, whatever
// the length of the arguments: each echoed argument is clipped (clip.Max)
// and, as a last resort, the whole message is cut.
const maxErrorLen = 512

// parseFlags parses the command line; help goes to stdout (errHelp), and
// nothing is printed on an error (the caller prints it). Its errors are
// usage errors of at most maxErrorLen bytes.
func parseFlags(args []string, stdout io.Writer) (config, error) {
	c, err := parseArgs(args, stdout)
	if err != nil && !errors.Is(err, errHelp) {
		return c, usageError{boundedError{err}}
	}
	return c, err
}

// boundedError cuts the text of err to maxErrorLen bytes.
type boundedError struct{ err error }

func (e boundedError) Error() string {
	msg := e.err.Error()
	if len(msg) <= maxErrorLen {
		return msg
	}
	const tail = "… (message cut)"
	n := maxErrorLen - len(tail)
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + tail
}

func (e boundedError) Unwrap() error { return e.err }

// flagError rewrites pflag's parse errors, which echo arguments of any
// length, with every echoed argument clipped.
func flagError(err error) error {
	var (
		notExist *pflag.NotExistError
		noValue  *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &notExist):
		if short := notExist.GetSpecifiedShortnames(); short != "" {
			return fmt.Errorf("unknown shorthand flag %s in -%s", clip.Quote(notExist.GetSpecifiedName()), clip.Text(short))
		}
		return fmt.Errorf("unknown flag --%s", clip.Text(notExist.GetSpecifiedName()))
	case errors.As(err, &noValue):
		name := noValue.GetSpecifiedName()
		if f := noValue.GetFlag(); f != nil {
			name = f.Name
		}
		return fmt.Errorf("flag needs an argument: --%s", clip.Text(name))
	case errors.As(err, &invalid):
		cause := errors.Unwrap(invalid)
		var num *strconv.NumError
		if errors.As(cause, &num) {
			cause = num.Err // "invalid syntax" or "value out of range", without the value again
		}
		why := "invalid"
		if cause != nil {
			why = strings.ReplaceAll(cause.Error(), strconv.Quote(invalid.GetValue()), clip.Quote(invalid.GetValue()))
		}
		return fmt.Errorf("invalid argument %s for --%s: %s", clip.Quote(invalid.GetValue()), invalid.GetFlag().Name, why)
	case errors.As(err, &syntax):
		return fmt.Errorf("bad flag syntax: %s", clip.Quote(syntax.GetSpecifiedFlag()))
	}
	return err
}

// parseArgs is parseFlags without the bound on its errors' length.
func parseArgs(args []string, stdout io.Writer) (config, error) {
	var c config
	var precision, layout, chain, op, outPrec string
	fs := pflag.NewFlagSet("convgen", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	once(fs, &c.shapeText, "shape", "", "", "the convolution, as KEY=VALUE pairs: N,C,H,W,K,R,S required; stride, pad, dilation (also _h/_w), groups, bias optional; with -op transposed ConvTranspose2d's, plus output_padding (also _h/_w)")
	once(fs, &precision, "precision", "", "fp32", "arithmetic: fp32, tf32, 3xtf32, fp16 or bf16")
	once(fs, &layout, "layout", "", "nchw", "input/output layout: nchw (filter KCRS) or nhwc (filter KRSC)")
	once(fs, &op, "op", "", "fprop", "the computation: fprop (the forward convolution), dgrad (the input gradient dX), wgrad (the filter and bias gradients dW, dBias) or transposed (ConvTranspose2d, -shape in its terms plus output_padding, bias=false: computed by the dgrad kernels); docs/families.md#ops-the-gradients")
	fs.BoolVar(&c.train, "train", false, "the training package: tune (or replay) fprop, dgrad and wgrad, each its own record, and write one package whose Kernel has Forward, BackwardData and BackwardFilter (not with -op, -epilogue, -out-precision)")
	once(fs, &chain, "epilogue", "", "", "chain applied to each output after the bias, in order, e.g. scale_shift,relu or residual(0.5),gelu (docs/epilogue.md)")
	once(fs, &outPrec, "out-precision", "", "", "the output's element type when it is not the input's: fp32, fp16 or bf16 (e.g. tf32 stored as bf16, fp16 stored as fp32); forward op only (docs/epilogue.md#output-precision)")
	once(fs, &c.out, "out", "o", "", "directory of the generated package (written atomically)")
	once(fs, &c.reportDir, "report", "", "", "write the reports (REPORT.md, report.json, candidates.csv, candidates.svg) to this directory instead of the package")
	once(fs, &c.torch, "torch", "", "", "also write the kernel as a PyTorch module (a Python package, imported by this directory's name) to this directory")
	once(fs, &c.pkg, "pkg", "", "", "package name (default: the output directory's name)")
	once(fs, &c.cache, "cache", "", "convgen-cache.json", "tuning cache file: read for replay, written after tuning")
	once(fs, &c.arch, "arch", "", "", "target arch when replaying without a GPU, e.g. sm_90 (default: any record)")
	once(fs, &c.device, "device", "", "", "device name to pick among cache records when replaying without a GPU")
	fs.BoolVar(&c.untuned, "untuned", false, "without a GPU and without a cache record: write an untuned package (a default configuration as PTX for compute_80, compiled with NVRTC) instead of failing")
	fs.BoolVar(&c.retune, "retune", false, "tune even when the cache has a matching record (needs a GPU)")
	fs.IntVar(&c.trials, "trials", 64, "candidates to measure at most (0: every candidate)")
	fs.DurationVar(&c.budget, "time", time.Minute, "tuning time budget (0: none)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the candidate sampling and of the check inputs")
	fs.IntVar(&c.jobs, "jobs", 0, "concurrent NVRTC compiles (0: the number of CPUs)")
	fs.DurationVar(&c.compileTO, "compile-timeout", autotune.DefaultCompileTimeout, "give up on a candidate whose NVRTC compile takes longer (recorded as a compile failure)")
	fs.IntVar(&c.runs, "runs", 30, "timed runs per candidate, at least 20 (the median is kept)")
	fs.StringArrayVar(&c.pin, "pin", nil, "measure (with -compile-only: compile) only this candidate ID (family/knobs, as in the report; a pin lifts the soft pruning rules); repeat for several; a pinned run always tunes and is not saved to the cache")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "print nothing on success (errors still go to stderr)")
	fs.BoolVar(&c.compile, "compile-only", false, "render and NVRTC-compile every candidate (or only the -pin ones) for -arch (default sm_90) on the CPU, print their resources, write nothing but -source-dir (no GPU needed; -o not required)")
	fs.BoolVar(&c.list, "list", false, "print the IDs of the candidates the shape has for -arch (default sm_90), one a line, for -pin; writes nothing, needs no GPU and no -o")
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "with -list: also the candidates rejected statically, with the reason")
	once(fs, &c.sourceDir, "source-dir", "", "", "with -compile-only: also write the CUDA source of each candidate compiled (or failing to) to this directory as KERNEL.cu")
	var configFile string // handled before parsing (splitConfig): listed for -help
	once(fs, &configFile, "config", "", "", "generate every package a JSON config file lists (shape, precision, layout, out, pkg, cache each); the other flags apply to each")
	help := fs.BoolP("help", "h", false, "show this help (on stdout)")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: convgen -shape N=..,C=..,H=..,W=..,K=..,R=..,S=.. -o DIR [flags]\n\nFlags (one dash or two; string flags given once, -pin repeatable):\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(longDashes(args, fs)); err != nil {
		return c, usageError{flagError(err)}
	}
	if *help {
		fs.Usage()
		return c, errHelp
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected argument %s (flags are -name value)", clip.Quote(fs.Arg(0)))}
	}
	if c.shapeText == "" {
		return c, usageError{errors.New("-shape is required, e.g. -shape N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2")}
	}
	var err error
	if strings.EqualFold(op, transposedOp) {
		// ConvTranspose2d's shape, computed as the data gradient of the
		// forward convolution whose input is its output.
		t, err := problem.ParseTransposed(c.shapeText)
		if err != nil {
			return c, usageError{fmt.Errorf("-op transposed: %w", err)}
		}
		if c.problem.Shape, err = t.Dgrad(); err != nil {
			return c, usageError{fmt.Errorf("-op transposed: %w", err)}
		}
		c.transposed, op = true, problem.OpDgrad.String()
	} else {
		shape, err := problem.ParseShape(c.shapeText)
		if err != nil {
			if strings.Contains(strings.ToLower(c.shapeText), "output_padding") {
				err = fmt.Errorf("%w (output_padding is a transposed convolution's: -op %s)", err, transposedOp)
			}
			return c, usageError{err}
		}
		c.problem.Shape = shape
	}
	if c.problem.Precision, err = problem.ParsePrecision(precision); err != nil {
		return c, usageError{fmt.Errorf("-precision: %w", err)}
	}
	if c.problem.Layout, err = problem.ParseLayout(layout); err != nil {
		return c, usageError{fmt.Errorf("-layout: %w", err)}
	}
	if c.problem.Epilogue, err = epilogue.Parse(chain); err != nil {
		return c, usageError{fmt.Errorf("-epilogue: %w", err)}
	}
	if c.problem.Op, err = problem.ParseOp(op); err != nil {
		return c, usageError{fmt.Errorf("-op: %w (or %s: ConvTranspose2d)", err, transposedOp)}
	}
	if outPrec != "" {
		if c.problem.OutPrecision, err = problem.ParseStorage(outPrec); err != nil {
			return c, usageError{fmt.Errorf("-out-precision: %w", err)}
		}
		// The input's own type is no out-precision: the same problem, key
		// and package as without the flag.
		c.problem = c.problem.Canonical()
	}
	if err := c.checkTrain(fs.Changed("op")); err != nil {
		return c, usageError{err}
	}
	if err := c.problem.Validate(); err != nil {
		if c.transposed {
			return c, usageError{fmt.Errorf("-op %s (computed as op dgrad): %w", transposedOp, err)}
		}
		return c, usageError{fmt.Errorf("-op %s: %w", c.problem.Op, err)}
	}
	if c.torch != "" && c.problem.Op != problem.OpFprop {
		op := c.problem.Op.String()
		if c.transposed {
			op = transposedOp
		}
		return c, usageError{fmt.Errorf("-torch goes with -op fprop (the PyTorch module runs the forward kernel), not -op %s", op)}
	}
	if c.torch != "" && c.problem.OutDiffers() {
		return c, usageError{fmt.Errorf("-torch does not go with -out-precision %s yet: the PyTorch module returns a tensor of the input's dtype (%s); write the Go package alone", c.problem.OutPrecision, c.problem.Precision)}
	}
	if c.sourceDir != "" && !c.compile {
		return c, usageError{errors.New("-source-dir needs -compile-only (the sources of the compiled candidates)")}
	}
	if c.list && c.compile {
		return c, usageError{errors.New("-list and -compile-only: give one (-list prints the candidates, -compile-only compiles them)")}
	}
	if c.list && (len(c.pin) > 0 || c.retune) {
		// (-o is allowed: -config's packages name theirs, which -list ignores.)
		return c, usageError{errors.New("-list prints every candidate and measures none: -pin and -retune do not go with it (-compile-only takes -pin)")}
	}
	if c.verbose && !c.list {
		return c, usageError{errors.New("-v needs -list (it lists the rejected candidates too)")}
	}
	if c.reportDir != "" && (c.compile || c.list) {
		return c, usageError{errors.New("-report goes with a package to write, not -compile-only or -list")}
	}
	if c.torch != "" && (c.compile || c.list) {
		return c, usageError{errors.New("-torch goes with a package to write, not -compile-only or -list")}
	}
	if err := c.checkTorch(); err != nil {
		return c, usageError{err}
	}
	if err := c.checkDirs(); err != nil {
		return c, usageError{err}
	}
	if c.out == "" && !c.compile && !c.list {
		return c, usageError{errors.New("-o DIR is required: the directory of the generated package")}
	}
	if err := c.setPackage(fs.Changed("pkg")); err != nil {
		return c, usageError{err}
	}
	for _, f := range tuningFlags {
		if fs.Changed(f) {
			c.tuningSet = append(c.tuningSet, "-"+f)
		}
	}
	if c.arch != "" && !archPattern.MatchString(c.arch) {
		return c, usageError{fmt.Errorf("-arch %s: want sm_XY, e.g. sm_90", clip.Quote(c.arch))}
	}
	if cc, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(c.arch, "sm_"), "a")); c.arch != "" && (err != nil || cc < minArch) {
		return c, usageError{fmt.Errorf("-arch %s: convgen's kernels need sm_%d or newer", clip.Quote(c.arch), minArch)}
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

// checkTrain checks -train against the flags it does not go with: -op
// (it makes all three), an epilogue chain and an output precision (which
// the gradients refuse), and the flags of one op's search or package.
func (c config) checkTrain(opGiven bool) error {
	if !c.train {
		return nil
	}
	switch {
	case opGiven:
		return errors.New("-train and -op: give one (-train makes the package of all three ops, fprop, dgrad and wgrad; -op one op's)")
	case len(c.problem.Epilogue) > 0:
		return fmt.Errorf("-train does not go with -epilogue %s: op dgrad and op wgrad refuse an epilogue chain (%w); write the fused forward with -epilogue alone", c.problem.Epilogue, problem.ErrEpilogueOp)
	case c.problem.OutDiffers():
		return fmt.Errorf("-train does not go with -out-precision %s: op dgrad and op wgrad refuse an output precision (%w)", c.problem.OutPrecision, problem.ErrOutPrecisionOp)
	case c.compile || c.list:
		return errors.New("-train goes with a package to write, not -compile-only or -list (which take one op: -op)")
	case len(c.pin) > 0:
		return errors.New("-train does not go with -pin: a pinned candidate is of one op's family (-op)")
	case c.untuned:
		return errors.New("-train does not go with -untuned: a training package carries tuned kernels (-untuned writes one op's package, -op)")
	}
	return nil
}

// checkTorch checks -torch: a directory whose name Python can import
// (checkDirs checks that it is its own).
func (c config) checkTorch() error {
	if c.torch == "" {
		return nil
	}
	dir := filepath.Clean(c.torch)
	if err := torchmod.CheckName(filepath.Base(dir)); err != nil {
		return fmt.Errorf("-torch %s: %w", clip.Text(c.torch), err)
	}
	return nil
}

// checkDirs checks that the directories convgen writes (-o, -report,
// -torch), each replaced as a whole, are distinct and none lies inside
// another: a report written over the package, or a package inside the
// PyTorch module, would destroy or block the other.
func (c config) checkDirs() error {
	type dir struct{ flag, path, abs string }
	var dirs []dir
	for _, d := range []dir{{flag: "-o", path: c.out}, {flag: "-report", path: c.reportDir}, {flag: "-torch", path: c.torch}} {
		if d.path == "" {
			continue
		}
		abs, err := filepath.Abs(d.path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", d.flag, clip.Text(d.path), err)
		}
		d.abs = abs
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if d.flag != "-o" && gen.HoldsPackage(d.path) {
			return fmt.Errorf("%s %s holds a generated Go package; give the %s a directory of its own", d.flag, clip.Text(d.path), map[string]string{"-report": "reports", "-torch": "PyTorch module"}[d.flag])
		}
	}
	for i, a := range dirs {
		for _, b := range dirs[i+1:] {
			switch {
			case a.abs == b.abs:
				return fmt.Errorf("%s %s and %s %s: the same directory; each is replaced as a whole and needs its own", a.flag, clip.Text(a.path), b.flag, clip.Text(b.path))
			case within(a.abs, b.abs), within(b.abs, a.abs):
				inner, outer := a, b
				if within(b.abs, a.abs) {
					inner, outer = b, a
				}
				return fmt.Errorf("%s %s lies inside %s %s; each is replaced as a whole: give directories side by side", inner.flag, clip.Text(inner.path), outer.flag, clip.Text(outer.path))
			}
		}
	}
	return nil
}

// within says whether absolute path p lies strictly inside directory dir.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
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

// setPackage checks -pkg, or without it derives the package name from -o's
// directory; with -compile-only, which writes no package, a name is not
// needed. The error blames -pkg only when -pkg was given.
func (c *config) setPackage(pkgGiven bool) error {
	if pkgGiven {
		if c.compile || c.list {
			return nil
		}
		c.into = c.out != "" && filepath.Clean(c.out) == "."
		if err := gen.CheckPackageName(c.pkg); err != nil {
			return fmt.Errorf("-pkg: %w", err)
		}
		return nil
	}
	if c.out == "" {
		return nil
	}
	if c.into = filepath.Clean(c.out) == "." && !c.compile && !c.list; c.into {
		c.pkg = os.Getenv("GOPACKAGE") // set by go generate
		if c.pkg == "" {
			return errors.New("-o .: writing into the current directory's package needs its name: run convgen from a go:generate line (which sets $GOPACKAGE) or give -pkg NAME")
		}
		if err := gen.CheckPackageName(c.pkg); err != nil {
			return fmt.Errorf("-o . in package %s ($GOPACKAGE): %w", clip.Quote(c.pkg), err)
		}
		return nil
	}
	dir := filepath.Base(filepath.Clean(c.out))
	c.pkg = packageName(dir)
	if c.compile || c.list {
		return nil
	}
	if c.pkg == "" {
		return fmt.Errorf("-o %s: no package name can be derived from the directory's name %s; name the package with -pkg NAME", clip.Text(c.out), clip.Quote(dir))
	}
	if err := gen.CheckPackageName(c.pkg); err != nil {
		return fmt.Errorf("-o %s: the package name derived from the directory's name is not usable (%w); name the package with -pkg NAME", clip.Text(c.out), err)
	}
	return nil
}

// packageName derives a package name from a directory name: lower-cased,
// other than ASCII letters and digits dropped, no leading digit.
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
	if c.problem.Op != problem.OpFprop {
		parts = append(parts, "-op", c.problem.Op.String())
	}
	if c.train {
		parts = append(parts, "-train")
	}
	if len(c.problem.Epilogue) > 0 {
		parts = append(parts, "-epilogue", c.problem.Epilogue.String())
	}
	if c.problem.OutDiffers() {
		parts = append(parts, "-out-precision", string(c.problem.OutPrecision))
	}
	if c.arch != "" {
		parts = append(parts, "-arch", c.arch)
	}
	if c.device != "" {
		parts = append(parts, "-device", c.device)
	}
	if c.reportDir != "" {
		parts = append(parts, "-report", filepath.ToSlash(c.reportDir))
	}
	if c.torch != "" {
		parts = append(parts, "-torch", filepath.ToSlash(c.torch))
	}
	if c.untuned {
		parts = append(parts, "-untuned")
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
