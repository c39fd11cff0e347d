package kernels

import (
	"reflect"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// mustKnobs parses candidate c's configuration into knob struct K.
func mustKnobs[K any](t *testing.T, c Candidate) K {
	t.Helper()
	k, err := parseKnobs[K](c.Family, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// exampleKnobs exercises what the conversion supports: plain int knobs,
// an embedded struct's knobs and an optional knob.
type exampleKnobs struct {
	hopperTile
	Stages int
	Extra  int `knob:",optional"`
}

func TestKnobsRoundTrip(t *testing.T) {
	k := exampleKnobs{hopperTile: hopperTile{TileP: 8, TileQ: 16, TileK: 96}, Stages: 2}
	cfg := knobsConfig(k)
	want := Config{"TileP": 8, "TileQ": 16, "TileK": 96, "Stages": 2}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("knobsConfig(%+v) = %v, want %v (Extra=0 left out)", k, cfg, want)
	}
	if got := (Candidate{Family: "x", Config: cfg}).ID(); got != "x/Stages=2,TileK=96,TileP=8,TileQ=16" {
		t.Errorf("ID = %q: want the knobs sorted by name", got)
	}
	back, err := parseKnobs[exampleKnobs]("x", cfg)
	if err != nil || back != k {
		t.Fatalf("parseKnobs(%v) = %+v, %v; want %+v", cfg, back, err, k)
	}
	k.Extra = 3
	if cfg := knobsConfig(k); cfg["Extra"] != 3 {
		t.Errorf("knobsConfig with Extra=3 = %v, want Extra in it", cfg)
	}
	if got := knobNames[exampleKnobs](); !reflect.DeepEqual(got, []string{"Extra", "Stages", "TileK", "TileP", "TileQ"}) {
		t.Errorf("knobNames = %v", got)
	}
}

// TestKnobsUnknownOrMissing checks that a misspelled knob (which a map
// look-up would read as 0) and a missing one are errors naming the knob.
func TestKnobsUnknownOrMissing(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{"TileP": 8, "TileQ": 8, "TileK": 96, "Stages": 2, "Stage": 2}, "unknown knob Stage"},
		{Config{"TileP": 8, "TileQ": 8, "TileK": 96, "stages": 2}, "lacks knob Stages"},
		{Config{"TileP": 8, "TileQ": 8, "TileK": 96}, "lacks knob Stages"},
	} {
		if _, err := parseKnobs[exampleKnobs]("x", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseKnobs(%v): err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

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

// TestAdmitSoftTyped checks that admitSoft lifts exactly the soft
// rejections, whatever their text, when nothing is kept.
func TestAdmitSoftTyped(t *testing.T) {
	mk := func(r Rejection) Candidate { return Candidate{Family: "x", Rejected: r.String(), Rejection: r} }
	got := admitSoft([]Candidate{
		mk(soft("waste", "a")), mk(hard("threads", "b")), mk(soft("custom", "c")), mk(hard("waste", "d")),
	})
	for i, want := range []string{"", "threads: b", "", "waste: d"} {
		if got[i].Rejected != want {
			t.Errorf("candidate %d: Rejected %q after admitSoft, want %q", i, got[i].Rejected, want)
		}
	}
	kept := admitSoft([]Candidate{mk(soft("waste", "a")), mk(Rejection{})})
	if kept[0].Rejected == "" {
		t.Error("admitSoft lifted a soft rejection although a candidate was kept")
	}
}

// TestKnobTypes checks every family's knob struct converts (knobFields
// panics on a field that is not an int).
func TestKnobTypes(t *testing.T) {
	for name, names := range map[string][]string{
		"direct":    knobNames[directKnobs](),
		"winograd":  knobNames[winogradKnobs](),
		"mma":       knobNames[mmaKnobs](),
		"mmahalf":   knobNames[gemmKnobs](),
		"wgmma":     knobNames[wgmmaKnobs](),
		"wgmmahalf": knobNames[wgmmaHalfKnobs](),
		"wgmmarow":  knobNames[wgmmaRowKnobs](),
		"igemm":     knobNames[igemmKnobs](),
		"generic":   knobNames[genericKnobs](),
	} {
		if len(names) < 5 {
			t.Errorf("%s: knobs %v", name, names)
		}
	}
}
