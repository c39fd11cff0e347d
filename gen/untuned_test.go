package gen

import (
	"strings"
	"testing"
)

// TestUntunedFiles: an untuned binding gives a package without a CUBIN
// whose Load runs the PTX (the CUBIN image has no code), marked untuned in
// its doc; a CUBIN, a fallback or a real architecture is refused.
func TestUntunedFiles(t *testing.T) {
	b := fp16NHWC(t)
	b.Untuned, b.Arch, b.CUBIN, b.Fallback = true, "compute_80", nil, nil
	b.PTX = ".version 7.8\n.target sm_80\n"
	files, err := Files(b)
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if strings.HasSuffix(name, ".cubin") {
			t.Errorf("untuned package has %s", name)
		}
	}
	kernel := string(files["kernel.go"])
	if strings.Contains(kernel, "go:embed kernel_") || !strings.Contains(kernel, "//go:embed kernel.ptx") {
		t.Errorf("kernel.go embeds a CUBIN or no PTX:\n%s", kernel)
	}
	if !strings.Contains(kernel, "convrt.Image{CC: 80, Launch:") {
		t.Errorf("kernel.go's CUBIN image is not an empty one for CC 80:\n%s", kernel)
	}
	if !strings.Contains(string(files["doc.go"]), "UNTUNED:") || !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(kernel, "//", "")), " "), "untuned and embeds no CUBIN") {
		t.Error("the package is not marked untuned")
	}
	for name, edit := range map[string]func(*Binding){
		"a CUBIN":    func(b *Binding) { b.CUBIN = []byte("x") },
		"a fallback": func(b *Binding) { b.Fallback = &Fallback{} },
		"sm_80":      func(b *Binding) { b.Arch = "sm_80" },
		"no PTX":     func(b *Binding) { b.PTX = "" },
	} {
		bad := b
		edit(&bad)
		if _, err := Files(bad); err == nil {
			t.Errorf("untuned with %s: no error", name)
		}
	}
}
