package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/convgen/convgen/internal/clip"
)

// Config is a config file (-config FILE, JSON): the packages of a network,
// each one problem, that one go:generate line produces. Relative paths
// are relative to the file's directory.
type Config struct {
	// Cache is the tuning cache of every package that names none
	// (default convgen-cache.json).
	Cache    string          `json:"cache,omitempty"`
	Packages []ConfigPackage `json:"packages"`
}

// ConfigPackage is one package of a Config: the flags of one convgen run.
type ConfigPackage struct {
	Shape     string `json:"shape"`               // as -shape
	Precision string `json:"precision,omitempty"` // as -precision (default fp32)
	Layout    string `json:"layout,omitempty"`    // as -layout (default nchw)
	Epilogue  string `json:"epilogue,omitempty"`  // as -epilogue (default: none)
	Op        string `json:"op,omitempty"`        // as -op (default fprop)
	// OutPrecision is as -out-precision (default: the input's type).
	OutPrecision string `json:"out_precision,omitempty"`
	Out          string `json:"out"`             // as -o
	Pkg          string `json:"pkg,omitempty"`   // as -pkg (default: out's name)
	Cache        string `json:"cache,omitempty"` // as -cache (default: the Config's)
	Torch        string `json:"torch,omitempty"` // as -torch (default: none)
	Train        bool   `json:"train,omitempty"` // as -train (default: one op's package)
}

// maxConfigBytes bounds a config file.
const maxConfigBytes = 1 << 20

// loadConfig reads and checks a config file.
func loadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("-config: %w", err)
	}
	if len(data) > maxConfigBytes {
		return Config{}, fmt.Errorf("-config %s: more than %d bytes", clip.Text(path), maxConfigBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("-config %s: %w", clip.Text(path), err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("-config %s: text after the JSON object", clip.Text(path))
	}
	if len(c.Packages) == 0 {
		return Config{}, fmt.Errorf("-config %s: no packages", clip.Text(path))
	}
	// Every package's directories (out, torch) are its own: a second
	// package written to the first's would silently replace it.
	seen := map[string]string{} // a cleaned directory → the entry that names it
	for i, p := range c.Packages {
		if p.Shape == "" || p.Out == "" {
			return Config{}, fmt.Errorf("-config %s: packages[%d]: shape and out are required", clip.Text(path), i)
		}
		for _, d := range []struct{ field, dir string }{{"out", p.Out}, {"torch", p.Torch}} {
			if d.dir == "" {
				continue
			}
			key := filepath.Clean(d.dir)
			if !filepath.IsAbs(key) {
				key = filepath.Join(filepath.Dir(path), key)
			}
			here := fmt.Sprintf("packages[%d].%s", i, d.field)
			if first, ok := seen[key]; ok {
				return Config{}, fmt.Errorf("-config %s: %s %s: the directory of %s too; every package needs its own", clip.Text(path), here, clip.Quote(d.dir), first)
			}
			seen[key] = here
		}
	}
	return c, nil
}

// args is the command line of one package of the config file at path,
// before the flags given with -config (which apply to every package).
func (p ConfigPackage) args(c Config, path string) []string {
	dir := filepath.Dir(path)
	rel := func(f string) string {
		if filepath.IsAbs(f) {
			return f
		}
		return filepath.Join(dir, f)
	}
	cache := p.Cache
	if cache == "" {
		cache = c.Cache
	}
	if cache == "" {
		cache = "convgen-cache.json"
	}
	args := []string{"-shape", p.Shape, "-o", rel(p.Out), "-cache", rel(cache)}
	if p.Torch != "" {
		args = append(args, "-torch", rel(p.Torch))
	}
	if p.Train {
		args = append(args, "-train")
	}
	for _, f := range []struct{ name, v string }{{"-precision", p.Precision}, {"-layout", p.Layout}, {"-epilogue", p.Epilogue}, {"-op", p.Op}, {"-out-precision", p.OutPrecision}, {"-pkg", p.Pkg}} {
		if f.v != "" {
			args = append(args, f.name, f.v)
		}
	}
	return args
}

// splitConfig finds -config FILE (or --config, -config=FILE) in args and
// returns the file and the other arguments; "" when there is none.
func splitConfig(args []string) (path string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			rest = append(rest, a)
			continue
		}
		if path != "" {
			return "", nil, usageError{errors.New("-config given twice")}
		}
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, usageError{errors.New("flag needs an argument: --config")}
			}
			i++
			value = args[i]
		}
		if value == "" {
			return "", nil, usageError{errors.New("-config must name a file")}
		}
		path = value
	}
	return path, rest, nil
}

// runConfig runs convgen once per package of the config file, with the
// other flags of the command line added to each; it stops at the first
// failure, which it names.
func runConfig(ctx context.Context, path string, rest []string, stdout, stderr io.Writer) error {
	for _, a := range rest {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
		case n == "shape" || n == "o" || n == "out" || n == "pkg" || n == "precision" || n == "layout" || n == "epilogue" || n == "op" || n == "train" || n == "out-precision" || n == "cache":
			return usageError{fmt.Errorf("-config: %s belongs in the config file, one per package", clip.Text(a))}
		case n == "report":
			return usageError{errors.New("-config: -report would write the reports of every package to one directory, each replacing the last; leave the reports in their packages")}
		case n == "torch":
			return usageError{errors.New("-config: -torch belongs in the config file, one directory per package (\"torch\")")}
		}
	}
	c, err := loadConfig(path)
	if err != nil {
		return usageError{err}
	}
	for i, p := range c.Packages {
		cfg, err := parseFlags(append(p.args(c, path), rest...), stdout)
		if errors.Is(err, errHelp) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("-config %s: packages[%d] (%s): %w", clip.Text(path), i, clip.Text(p.Out), err)
		}
		out, warn := streams(cfg, stdout, stderr)
		if err := generate(ctx, cfg, out, warn); err != nil {
			return fmt.Errorf("-config %s: packages[%d] (%s): %w", clip.Text(path), i, clip.Text(p.Out), err)
		}
	}
	return nil
}
