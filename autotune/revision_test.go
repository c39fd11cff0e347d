package autotune

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// revisionProblems are the problems whose search order fingerprints the
// search: ResNet-50 layers (a 3×3 on a 56² map, a 7² map, a strided 1×1,
// a 3×3 at stride 2)
// at N=32 and 256, the flagship and a depthwise layer on a 7² map, in
// every precision and layout, and their data and filter gradients.
var revisionProblems = []string{
	"N=32,C=64,H=56,W=56,K=64,R=3,S=3,pad=1",
	"N=256,C=512,H=7,W=7,K=512,R=3,S=3,pad=1",
	"N=32,C=256,H=56,W=56,K=512,R=1,S=1,stride=2",
	"N=32,C=256,H=28,W=28,K=256,R=3,S=3,stride=2,pad=1",
	"N=256,C=3,H=224,W=224,K=96,R=11,S=11,stride=4,pad=2",
	"N=32,C=960,H=7,W=7,K=960,R=3,S=3,pad=1,groups=960",
}

// searchFingerprint hashes the order in which a search takes the kept
// candidates of the revision problems on an H100 (a sampled search with
// the default seed, and a full sweep): each problem's candidate count and
// its kept candidates' IDs in that order, as Tune would enumerate, cost
// and order them.
func searchFingerprint(t *testing.T) string {
	t.Helper()
	lim := kernels.DefaultLimits(90)
	lim.SM90a, lim.SMs = true, 132
	h := sha256.New()
	for _, spec := range revisionProblems {
		s, err := problem.ParseShape(spec)
		if err != nil {
			t.Fatal(err)
		}
		for _, prec := range []problem.Precision{problem.FP32, problem.TF32, problem.TF32x3, problem.FP16, problem.BF16} {
			for _, lay := range []problem.Layout{problem.NCHW, problem.NHWC} {
				for _, op := range []problem.Op{problem.OpFprop, problem.OpDgrad, problem.OpWgrad} {
					p := problem.Problem{Shape: s, Precision: prec, Layout: lay, Op: op}
					cands, err := kernels.Enumerate(p, lim)
					if err != nil {
						fmt.Fprintf(h, "%s: %v\n", p, err)
						continue
					}
					trials := make([]Trial, len(cands))
					var kept []int
					for i, c := range cands {
						trials[i] = Trial{ID: c.ID(), Family: c.Family, Config: c.Config}
						trials[i].cost, trials[i].hasCost = kernels.PredictedCost(p, c, lim)
						if c.Rejected == "" {
							kept = append(kept, i)
						}
					}
					fmt.Fprintf(h, "%s: %d candidates\n", p, len(cands))
					for _, rng := range []*rand.Rand{rand.New(rand.NewPCG(1, 1)), nil} {
						for _, i := range explorationOrder(kept, trials, rng) {
							fmt.Fprintln(h, trials[i].ID)
						}
					}
				}
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSearchRevision fails when the search changes (what the families
// list and keep, or the order it takes them in) while SearchRevision
// stays: a changed search needs a new revision, so that replays of
// records tuned before it note that -retune may find a faster kernel.
// The golden file holds the revision and its fingerprint; -update
// rewrites it once the revision is bumped.
func TestSearchRevision(t *testing.T) {
	golden := filepath.Join("testdata", "search-revision.golden")
	got := searchFingerprint(t)
	if *update {
		if err := os.WriteFile(golden, []byte(fmt.Sprintf("%d %s\n", SearchRevision, got)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var rev int
	var want string
	if _, err := fmt.Sscan(strings.TrimSpace(string(data)), &rev, &want); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	switch {
	case got != want && rev == SearchRevision:
		t.Errorf("the search changed (fingerprint %.12s, revision %d's is %.12s): bump autotune.SearchRevision, say what changed in its doc comment, and run go test ./autotune -run TestSearchRevision -update",
			got, rev, want)
	case rev != SearchRevision:
		t.Errorf("%s is revision %d's, SearchRevision is %d: run go test ./autotune -run TestSearchRevision -update", golden, rev, SearchRevision)
	}
}
