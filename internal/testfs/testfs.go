// Package testfs holds what several packages' tests need of the file system
// and the build environment: reading a generated package's files, and the
// environment that builds with the cuda tag.
package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

// ReadTree reads every file in dir (not recursive: generated packages are
// flat); a subdirectory is reported as an error.
func ReadTree(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("%s: unexpected subdirectory %s", dir, e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// CUDABuildEnv returns the environment variables to add for a build with the
// cuda tag (cgo pointed at the CUDA 11.8 headers and driver stub that
// scripts/setup unpacks, unless CGO_CFLAGS is already set), or nil and why
// such a build is not possible here.
func CUDABuildEnv() ([]string, string) {
	if os.Getenv("CGO_CFLAGS") != "" {
		return []string{"CGO_ENABLED=1"}, ""
	}
	stub := os.Getenv("CONVGEN_CUDA_STUB")
	if stub == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, "no home directory to find the CUDA headers in: " + err.Error()
		}
		stub = filepath.Join(home, ".cache", "convgen", "cuda-11.8")
	}
	if _, err := os.Stat(filepath.Join(stub, "include", "cuda.h")); err != nil {
		return nil, "CGO_CFLAGS is empty and " + err.Error() + " (run scripts/setup)"
	}
	return []string{"CGO_ENABLED=1", "CGO_CFLAGS=-I" + filepath.Join(stub, "include"), "CGO_LDFLAGS=-L" + filepath.Join(stub, "lib")}, ""
}
