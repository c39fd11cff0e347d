package kernels

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// cpuBuildFlags are the g++ flags of every CPU run's kernel, before a
// test's own (such as AddressSanitizer's).
var cpuBuildFlags = []string{"-std=c++20", "-O1", "-fno-strict-aliasing", "-pthread", "-w"}

// cpuBuild compiles the CPU-run source cpp (cpuShim's, then a kernel's) to
// exe with cpuBuildFlags and flags, and returns g++'s output. The standard
// headers that cpuShim starts with come precompiled (cpuPCH) where g++
// could precompile them for these flags: parsing them had been most of each
// kernel's build. g++ reads the header itself where the precompiled one does
// not apply, so the build is the same either way.
func cpuBuild(gxx, exe, cpp string, flags ...string) ([]byte, error) {
	args := append(slices.Clone(cpuBuildFlags), flags...)
	if h := cpuPCH(gxx, args); h != "" {
		args = append(args, "-include", h)
	}
	return exec.Command(gxx, append(args, "-o", exe, cpp)...).CombinedOutput()
}

// cpuShimHeaders is the #include lines that cpuShim starts with.
func cpuShimHeaders() string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(cpuShim, "\n") {
		if !strings.HasPrefix(line, "#include ") {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

var (
	// cpuPCHDir holds the precompiled headers, one directory each; TestMain
	// removes it.
	cpuPCHDir struct {
		sync.Mutex
		path string
	}
	cpuPCHs sync.Map // g++ and its flags → func() string, cpuPCH's result
)

// cpuPCH returns the path of a header of cpuShimHeaders precompiled by gxx
// with args, built once per test binary and args, for -include; or "" if
// it could not be built.
func cpuPCH(gxx string, args []string) string {
	key := strings.Join(append([]string{gxx}, args...), "\x00")
	f, _ := cpuPCHs.LoadOrStore(key, sync.OnceValue(func() string {
		cpuPCHDir.Lock()
		if cpuPCHDir.path == "" {
			if dir, err := os.MkdirTemp("", "convgen-cpu-pch-"); err == nil {
				cpuPCHDir.path = dir
			}
		}
		base := cpuPCHDir.path
		cpuPCHDir.Unlock()
		if base == "" {
			return ""
		}
		dir, err := os.MkdirTemp(base, "pch")
		if err != nil {
			return ""
		}
		h := filepath.Join(dir, "cpu_shim.h")
		if err := os.WriteFile(h, []byte(cpuShimHeaders()), 0o644); err != nil {
			return ""
		}
		if err := exec.Command(gxx, append(slices.Clone(args), "-x", "c++-header", "-o", h+".gch", h)...).Run(); err != nil {
			return ""
		}
		return h
	}))
	return f.(func() string)()
}

// TestMain runs the tests with twice as many parallel tests as -parallel's
// default (GOMAXPROCS) unless -test.parallel is given: the tests wait on
// their compile workers, NVRTC servers and g++, so that two at a time had
// left a core idle. At the end it stops the NVRTC servers (poolCompile)
// and removes the CPU runs' precompiled headers (cpuPCH). Started as an
// NVRTC server (nvrtcServeEnv), it serves instead of running tests.
func TestMain(m *testing.M) {
	if path := os.Getenv(nvrtcServeEnv); path != "" {
		os.Exit(serveNVRTC(path)) // an NVRTC server of the pool (poolCompile), not a test run
	}
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		if err := flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	code := m.Run()
	stopNVRTCPool()
	cpuPCHDir.Lock()
	if cpuPCHDir.path != "" {
		os.RemoveAll(cpuPCHDir.path)
	}
	cpuPCHDir.Unlock()
	os.Exit(code)
}
