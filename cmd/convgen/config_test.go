package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfig: one -config run writes every package its file lists, paths
// relative to the file, with the command line's other flags (-q) applied
// to each; bad files and per-package flags on the command line are usage
// errors.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	putRecords(t, filepath.Join(dir, "net", "cache.json"), fixture(t, h200, 132))
	conf := filepath.Join(dir, "net", "convgen.json")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"cache": "cache.json", "packages": [
		{"shape": "` + flagship + `", "precision": "fp32", "layout": "nchw", "out": "conv1"},
		{"shape": "` + flagship + `", "out": "pkgs/second", "pkg": "conv1b"}]}`)
	r := runConvgen(t, "-config", conf, "-q")
	if r.code != 0 || r.stdout != "" || r.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q: want 0 and silence (-q)", r.code, r.stdout, r.stderr)
	}
	for _, doc := range []string{"conv1/doc.go", "pkgs/second/doc.go"} {
		b, err := os.ReadFile(filepath.Join(dir, "net", doc))
		if err != nil {
			t.Errorf("%s: %v", doc, err)
		}
		if doc == "pkgs/second/doc.go" && !strings.Contains(string(b), "package conv1b") {
			t.Errorf("%s is not package conv1b", doc)
		}
	}
	for _, tc := range []struct {
		name, text string
		args       []string
		want       string
	}{
		{"unknown field", `{"packages": [{"shape": "x", "out": "y", "colour": "red"}]}`, nil, "colour"},
		{"no packages", `{"packages": []}`, nil, "no packages"},
		{"no out", `{"packages": [{"shape": "` + flagship + `"}]}`, nil, "out are required"},
		{"bad shape", `{"packages": [{"shape": "N=1", "out": "y"}]}`, nil, "packages[0]"},
		{"-shape too", `{"packages": [{"shape": "` + flagship + `", "out": "y"}]}`, []string{"-shape", flagship}, "belongs in the config file"},
		{"-report", `{"packages": [{"shape": "` + flagship + `", "out": "y"}]}`, []string{"-report", "reports"}, "each replacing the last"},
		{"--report=", `{"packages": [{"shape": "` + flagship + `", "out": "y"}]}`, []string{"--report=reports"}, "each replacing the last"},
		{"one out twice", `{"packages": [{"shape": "` + flagship + `", "out": "y"}, {"shape": "` + flagship + `", "precision": "tf32", "out": "./y/"}]}`, nil, `packages[1].out "./y/": the directory of packages[0].out too`},
		{"torch as out", `{"packages": [{"shape": "` + flagship + `", "out": "y"}, {"shape": "` + flagship + `", "out": "z", "torch": "y"}]}`, nil, `packages[1].torch "y": the directory of packages[0].out too`},
	} {
		write(tc.text)
		r := runConvgen(t, append([]string{"--config=" + conf}, tc.args...)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", tc.name, r.code, r.stderr)
		}
		oneErrorLine(t, r, tc.want)
	}
	if r := runConvgen(t, "-config", filepath.Join(dir, "none.json")); r.code != 2 {
		t.Errorf("missing config file: exit %d, want 2", r.code)
	}
}

// TestConfigQuietKeepsAnswer: with -config, -q still keeps the answer of
// -list on stdout (as without -config) and prints nothing else.
func TestConfigQuietKeepsAnswer(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "convgen.json")
	text := `{"packages": [{"shape": "` + flagship + `", "out": "conv1"}]}`
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := runConvgen(t, "-shape", flagship, "-list", "-q")
	if plain.code != 0 || plain.stdout == "" {
		t.Fatalf("-list -q: exit %d, stdout %q, stderr %q: want 0 and the IDs", plain.code, plain.stdout, plain.stderr)
	}
	r := runConvgen(t, "-config", conf, "-list", "-q")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("-config -list -q: exit %d, stderr %q: want 0 and no stderr", r.code, r.stderr)
	}
	if r.stdout != plain.stdout {
		t.Errorf("-config -list -q printed %q, want the IDs -list -q prints (%d bytes)", r.stdout, len(plain.stdout))
	}
}
