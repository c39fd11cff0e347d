package kernels

import (
	"reflect"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// TestRenderUnknownKnob checks that every family refuses a configuration
// with a misspelled knob instead of rendering the kernel with the knob it
// meant read as 0.
func TestRenderUnknownKnob(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	seen := map[string]bool{}
	for _, prec := range problem.Precisions {
		for _, lay := range problem.Layouts {
			p := flagship(t, prec, lay)
			cands, err := Enumerate(p, lim)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range kept(cands) {
				if seen[c.Family] {
					continue
				}
				seen[c.Family] = true
				if _, err := RenderCandidate(p, c); err != nil {
					t.Fatalf("%s: %v", c.ID(), err)
				}
				for knob := range c.Config {
					cfg := Config{}
					for k, v := range c.Config {
						cfg[k] = v
					}
					typo := strings.ToLower(knob[:1]) + knob[1:]
					cfg[typo] = cfg[knob]
					if _, err := RenderCandidate(p, Candidate{Family: c.Family, Config: cfg}); err == nil || !strings.Contains(err.Error(), "unknown knob "+typo) {
						t.Errorf("%s with %s=%d too: err = %v, want an unknown knob error", c.ID(), typo, cfg[typo], err)
					}
					break
				}
			}
		}
	}
	if len(seen) < 6 {
		t.Errorf("checked %d families on the flagship, want most: %v", len(seen), seen)
	}
}

// TestCandidatesCanonical checks, for every family, that a candidate's
// Config is its knob struct's serialized form, that the typed verdict and
// the string agree, and that rendering keeps the configuration.
func TestCandidatesCanonical(t *testing.T) {
	lim := DefaultLimits(90)
	lim.SM90a = true
	families := map[string]bool{}
	for _, prec := range problem.Precisions {
		for _, lay := range problem.Layouts {
			p := flagship(t, prec, lay)
			for _, f := range Families() {
				if f.Serves(p) != nil {
					continue
				}
				for _, c := range f.Space(p, lim) {
					if c.Rejected != c.Rejection.String() {
						t.Fatalf("%s: Rejected %q, Rejection %+v", c.ID(), c.Rejected, c.Rejection)
					}
					if c.Rejected != "" && !strings.HasPrefix(c.Rejected, c.Rejection.Rule+": ") {
						t.Fatalf("%s: reason %q does not start with its rule %q", c.ID(), c.Rejected, c.Rejection.Rule)
					}
					if c.Rejected != "" || families[c.Family] {
						continue
					}
					families[c.Family] = true
					k, err := RenderCandidate(p, c)
					if err != nil {
						t.Fatalf("%s: %v", c.ID(), err)
					}
					if !reflect.DeepEqual(k.Config, c.Config) {
						t.Errorf("%s: rendered config %v", c.ID(), k.Config)
					}
				}
			}
		}
	}
	if len(families) < 6 {
		t.Errorf("rendered %d families on the flagship, want most: %v", len(families), families)
	}
}
