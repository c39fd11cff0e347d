package family

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/convgen/convgen/problem"
)

// exampleTile is an embedded knob struct.
type exampleTile struct {
	TileP, TileQ, TileK int
}

// exampleKnobs exercises what the conversion supports: plain int knobs,
// an embedded struct's knobs and an optional knob.
type exampleKnobs struct {
	exampleTile
	Stages int
	Extra  int `knob:",optional"`
}

func TestKnobsRoundTrip(t *testing.T) {
	k := exampleKnobs{exampleTile: exampleTile{TileP: 8, TileQ: 16, TileK: 96}, Stages: 2}
	cfg := KnobsConfig(k)
	want := Config{"TileP": 8, "TileQ": 16, "TileK": 96, "Stages": 2}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("KnobsConfig(%+v) = %v, want %v (Extra=0 left out)", k, cfg, want)
	}
	if got := (Candidate{Family: "x", Config: cfg}).ID(); got != "x/Stages=2,TileK=96,TileP=8,TileQ=16" {
		t.Errorf("ID = %q: want the knobs sorted by name", got)
	}
	back, err := ParseKnobs[exampleKnobs]("x", cfg)
	if err != nil || back != k {
		t.Fatalf("parseKnobs(%v) = %+v, %v; want %+v", cfg, back, err, k)
	}
	k.Extra = 3
	if cfg := KnobsConfig(k); cfg["Extra"] != 3 {
		t.Errorf("knobsConfig with Extra=3 = %v, want Extra in it", cfg)
	}
	if got := KnobNames[exampleKnobs](); !reflect.DeepEqual(got, []string{"Extra", "Stages", "TileK", "TileP", "TileQ"}) {
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
		if _, err := ParseKnobs[exampleKnobs]("x", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseKnobs(%v): err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestAdmitSoftTyped checks that AdmitSoft lifts exactly the soft
// rejections, whatever their text, when nothing is kept.
func TestAdmitSoftTyped(t *testing.T) {
	mk := func(r Rejection) Candidate { return Candidate{Family: "x", Rejected: r.String(), Rejection: r} }
	got := AdmitSoft([]Candidate{
		mk(Soft("waste", "a")), mk(Hard("threads", "b")), mk(Soft("custom", "c")), mk(Hard("waste", "d")),
	})
	for i, want := range []string{"", "threads: b", "", "waste: d"} {
		if got[i].Rejected != want {
			t.Errorf("candidate %d: Rejected %q after AdmitSoft, want %q", i, got[i].Rejected, want)
		}
	}
	kept := AdmitSoft([]Candidate{mk(Soft("waste", "a")), mk(Rejection{})})
	if kept[0].Rejected == "" {
		t.Error("AdmitSoft lifted a soft rejection although a candidate was kept")
	}
}

// TestRenderKnobs: a family's Render start passes Serves' refusal on as it
// is, refuses unparsable knobs, reports check's message as "FAMILY: config
// CFG: MESSAGE", and returns the knobs with their canonical Config (an
// optional knob at 0 left out).
func TestRenderKnobs(t *testing.T) {
	refuse := errors.New("not served")
	serves := func(p problem.Problem) error {
		if p.Shape.N == 0 {
			return refuse
		}
		return nil
	}
	check := func(k exampleKnobs) string {
		if k.Stages < 1 {
			return "Stages ≥ 1"
		}
		return ""
	}
	p := problem.Problem{Shape: problem.Shape{N: 1}}
	cfg := Config{"TileP": 8, "TileQ": 16, "TileK": 96, "Stages": 2, "Extra": 0}
	k, got, err := RenderKnobs("x", serves, p, cfg, check)
	if err != nil || k.Stages != 2 || !reflect.DeepEqual(got, Config{"TileP": 8, "TileQ": 16, "TileK": 96, "Stages": 2}) {
		t.Fatalf("RenderKnobs = %+v, %v, %v", k, got, err)
	}
	if _, _, err := RenderKnobs("x", serves, problem.Problem{}, cfg, check); !errors.Is(err, refuse) {
		t.Errorf("unserved problem: %v, want Serves' error", err)
	}
	if _, _, err := RenderKnobs("x", serves, p, Config{"TileP": 8}, check); err == nil {
		t.Error("missing knobs: no error")
	}
	bad := Config{"TileP": 8, "TileQ": 16, "TileK": 96, "Stages": 0}
	if _, _, err := RenderKnobs("x", serves, p, bad, check); err == nil || err.Error() != "x: config "+bad.String()+": Stages ≥ 1" {
		t.Errorf("failed check: %v", err)
	}
}
