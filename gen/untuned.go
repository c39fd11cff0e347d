package gen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convgen/convgen/kernels/launch"
	"github.com/convgen/convgen/problem"
)

// untunedSpec checks an untuned Binding (no CUBIN, PTX for a virtual
// architecture, no fallback) and makes its spec: the PTX stands in for
// both images, so that Load runs it on every GPU it supports.
func untunedSpec(b Binding, sh problem.Shape, elem element) (*spec, error) {
	a, err := launch.ParseArch(b.Arch)
	if err != nil || !a.Virtual {
		return nil, fmt.Errorf("gen: untuned arch %q: must be a virtual architecture like compute_80", b.Arch)
	}
	switch {
	case len(b.CUBIN) != 0:
		return nil, errors.New("gen: an untuned package has no CUBIN")
	case b.Fallback != nil:
		return nil, errors.New("gen: an untuned package has no fallback")
	case strings.TrimSpace(b.PTX) == "":
		return nil, errors.New("gen: an untuned package needs its PTX")
	}
	for _, f := range []struct{ name, v string }{{"command", b.Command}, {"summary", b.Summary}} {
		if err := checkLine(f.name, f.v); err != nil {
			return nil, fmt.Errorf("gen: %w", err)
		}
	}
	return &spec{Binding: b, shape: sh, elem: elem, cubinCC: a.CC, ptx: b.PTX, ptxCC: a.CC}, nil
}
