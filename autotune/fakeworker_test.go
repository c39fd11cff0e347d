//go:build !cuda

package autotune

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convgen/convgen/gpu"
)

// TestMain lets the test binary stand in for the GPU worker (fakeWorker),
// so that the tuner's process handling, failure classes and search run
// without a GPU.
func TestMain(m *testing.M) {
	if os.Getenv("CONVGEN_FAKE_WORKER") == "1" {
		fakeWorker()
		return
	}
	os.Exit(m.Run())
}

// fakeWorker answers the worker protocol without a GPU. Candidates behave
// by kernel name: "crash" exits mid-request (a fault), "hang" never answers
// (a timeout), "lazy" reports unwritten outputs (wrong); any other kernel is
// correct, with a median time derived from a hash of its name.
func fakeWorker() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake worker:", err)
			os.Exit(1)
		}
		var resp response
		switch req.Op {
		case "info", "init":
			resp.Info = gpu.Info{Name: "Fake GPU", ComputeCapability: "8.0", Arch: "sm_80", SMs: 4, Driver: "12.0",
				ClockMHz: 1000, SharedOptin: 166912, L2Bytes: 1 << 20, MemoryGBps: 100}
		case "measure":
			if _, err := os.Stat(req.Image); err != nil {
				resp.Status, resp.Error = StatusLoad, err.Error()
				break
			}
			switch {
			case strings.Contains(req.Kernel, "crash"):
				fmt.Fprintln(os.Stderr, "fake worker: illegal address")
				os.Exit(3)
			case strings.Contains(req.Kernel, "hang"):
				time.Sleep(time.Hour)
			case strings.Contains(req.Kernel, "lazy"):
				resp.Status, resp.NonFinite, resp.Error = StatusWrong, 100, "100 outputs not finite"
			default:
				h := fnv.New32a()
				h.Write([]byte(req.Kernel))
				base := 1 + float64(h.Sum32()%1000)/100
				resp.Status, resp.RelError, resp.SampleError = StatusOK, 1e-7, 2e-7
				if strings.Contains(req.Kernel, "sluggish") {
					base = 1000 // far slower than any other: the cutoff ends its runs
				}
				for i := 0; i < req.Runs; i++ {
					resp.TimesMS = append(resp.TimesMS, base+float64(i%3)*0.001)
					if req.CutoffMS > 0 && len(resp.TimesMS) >= cutoffRuns && slices.Min(resp.TimesMS) > req.CutoffMS {
						break // as the real worker does
					}
				}
			}
		}
		if err := enc.Encode(resp); err != nil {
			os.Exit(1)
		}
	}
}
