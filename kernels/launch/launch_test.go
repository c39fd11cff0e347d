package launch

import (
	"encoding/json"
	"testing"
)

func TestParseArch(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Arch
	}{
		{"sm_90", Arch{CC: 90}},
		{"sm_90a", Arch{CC: 90, Suffix: "a"}},
		{"sm_100f", Arch{CC: 100, Suffix: "f"}},
		{"sm_120", Arch{CC: 120}},
		{"compute_80", Arch{Virtual: true, CC: 80}},
		{"compute_90a", Arch{Virtual: true, CC: 90, Suffix: "a"}},
	} {
		got, err := ParseArch(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseArch(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if got.String() != c.in {
			t.Errorf("ParseArch(%q).String() = %q", c.in, got.String())
		}
	}
	for _, bad := range []string{"", "sm_", "sm_9", "sm_090", "sm_1000", "sm_90b", "sm_+90", "sm_9x", "compute_", "90", "SM_90", "sm_90aa", "compute_8"} {
		if a, err := ParseArch(bad); err == nil {
			t.Errorf("ParseArch(%q) = %+v, want an error", bad, a)
		}
	}
}

func TestArchMethods(t *testing.T) {
	a := MustParseArch("sm_90a")
	if !a.Specific() || a.Base() != SM(90) || a.Major() != 9 || a.Minor() != 0 || a.Capability() != "9.0" {
		t.Errorf("sm_90a: specific %v base %v major %d minor %d capability %s", a.Specific(), a.Base(), a.Major(), a.Minor(), a.Capability())
	}
	if got := Compute(80).Real().String(); got != "sm_80" {
		t.Errorf("compute_80 real = %s, want sm_80", got)
	}
	if got := SM(90).WithSuffix("a").VirtualArch().String(); got != "compute_90a" {
		t.Errorf("sm_90 + a, virtual = %s, want compute_90a", got)
	}
	if (Arch{}).Valid() || !SM(80).Valid() {
		t.Error("Valid: zero Arch valid or sm_80 invalid")
	}
}

func TestArchJSON(t *testing.T) {
	var v struct {
		A Arch `json:"arch"`
	}
	if err := json.Unmarshal([]byte(`{"arch":"sm_90a"}`), &v); err != nil || v.A != SM(90).WithSuffix("a") {
		t.Fatalf("unmarshal sm_90a: %+v, %v", v.A, err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"arch":"sm_90a"}` {
		t.Errorf("marshal: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"arch":"sm_9"}`), &v); err == nil {
		t.Error("unmarshal sm_9: no error")
	}
}

// TestLaunchJSON: embedded, a Launch marshals as its host's own fields with
// the tuning cache's names, in place.
func TestLaunchJSON(t *testing.T) {
	v := struct {
		Kernel string `json:"kernel"`
		Launch
		Arch string `json:"arch"`
	}{"k", Launch{Grid: [3]int{95, 1, 256}, Block: [3]int{256, 1, 1}, SharedBytes: 73728}, "sm_90"}
	b, err := json.Marshal(v)
	want := `{"kernel":"k","grid":[95,1,256],"block":[256,1,1],"shared_bytes":73728,"arch":"sm_90"}`
	if err != nil || string(b) != want {
		t.Errorf("marshal = %s, %v; want %s", b, err, want)
	}
	if v.Threads() != 256 || v.Blocks() != 95*256 {
		t.Errorf("threads %d blocks %d", v.Threads(), v.Blocks())
	}
	if got := v.Launch.String(); got != "grid 95,1,256 block 256,1,1 shared 73728" {
		t.Errorf("String = %q", got)
	}
}
