// Package nvrtctest opens NVRTC for tests: once per test binary, skipping
// the test where NVRTC is missing unless CONVGEN_REQUIRE_NVRTC=1 asks for a
// failure instead.
package nvrtctest

import (
	"os"
	"sync"
	"testing"

	"github.com/convgen/convgen/nvrtc"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// NVRTC from a skip into a failure.
const RequireEnv = "CONVGEN_REQUIRE_NVRTC"

// open opens NVRTC on its first call and returns the same library, or the
// same error, on every later one.
var open = sync.OnceValues(nvrtc.Open)

// Open returns NVRTC, opened once per test binary. Where it cannot be
// opened it skips t, or fails it when RequireEnv is 1.
func Open(t testing.TB) *nvrtc.Library {
	t.Helper()
	lib, err := open()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("NVRTC required (%s=1) but unavailable: %v", RequireEnv, err)
		}
		t.Skipf("NVRTC unavailable (set %s=1 to fail instead): %v", RequireEnv, err)
	}
	return lib
}
