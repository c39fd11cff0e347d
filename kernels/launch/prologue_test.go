package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrologueConventionInBenchmark: bench/suite.py, which launches
// tuned kernels through CuPy, spells the prologue convention as this
// package does.
func TestPrologueConventionInBenchmark(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "bench", "suite.py"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("PROLOGUE_SUFFIX, PROLOGUE_BLOCKS, PROLOGUE_THREADS = %q, %d, %d", PrologueSuffix, PrologueBlocks, PrologueThreads)
	if !strings.Contains(string(src), want) {
		t.Errorf("bench/suite.py lacks %q", want)
	}
	if l := PrologueLaunch(); l.Blocks() != PrologueBlocks || l.Threads() != PrologueThreads || l.SharedBytes != 0 {
		t.Errorf("PrologueLaunch() = %s", l)
	}
}
