package kernels

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/convgen/convgen/internal/csource"
	"github.com/convgen/convgen/problem"
	"github.com/convgen/convgen/templates"
)

// shapeData is the part of every template's data that describes the shape.
type shapeData struct {
	Shape                        string
	N, C, H, W, K, R, S, P, Q    int
	StrideH, StrideW, PadH, PadW int
	DilationH, DilationW         int
	Groups                       int
	Bias                         bool
	Layout                       problem.Layout
	NHWC, Half, BF16             bool
}

func newShapeData(p problem.Problem) shapeData {
	s := p.Shape
	return shapeData{
		Shape: s.String(),
		N:     s.N, C: s.C, H: s.H, W: s.W, K: s.K, R: s.R, S: s.S, P: s.P(), Q: s.Q(),
		StrideH: s.StrideH, StrideW: s.StrideW, PadH: s.PadH, PadW: s.PadW,
		DilationH: s.DilationH, DilationW: s.DilationW, Groups: s.Groups, Bias: s.Bias,
		Layout: p.Layout, NHWC: p.Layout == problem.NHWC,
		Half: p.Precision.ElementBytes() == 2, BF16: p.Precision == problem.BF16,
	}
}

// render executes the named template file with data; the file may use the
// shared partials of templates.Partial ({{template "shape" .}}).
func render(file string, data any) (string, error) {
	t, err := template.New(file).Option("missingkey=error").ParseFS(templates.FS, file, templates.Partial)
	if err != nil {
		return "", fmt.Errorf("parse template %s: %w", file, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render template %s: %w", file, err)
	}
	return b.String(), nil
}

// ReferenceName is the reference kernel's function name.
const ReferenceName = "convgen_reference"

// Reference renders the naive reference kernel: one thread per output, double
// accumulation, output written as float64 in the problem's output layout.
// It launches with 256 threads per block and no shared memory.
func Reference(p problem.Problem) (Kernel, error) {
	data := struct {
		shapeData
		Name string
	}{newShapeData(p), ReferenceName}
	src, err := render(referenceTemplate, data)
	if err != nil {
		return Kernel{}, err
	}
	_, _, _, outputs := p.Shape.Elements()
	return Kernel{
		Family: "reference",
		Config: Config{},
		Name:   ReferenceName,
		Source: src,
		Launch: Launch{Grid: [3]int{(outputs + 255) / 256, 1, 1}, Block: [3]int{256, 1, 1}},
	}, nil
}

// Families lists every kernel family in a stable order.
func Families() []Family {
	return []Family{Direct{}, Winograd{}, MMA{}, MMAHalf{}, WGMMA{}, WGMMAHalf{}, WGMMARow{}, IGEMM{}, Generic{}}
}

// FamilyByName finds a family by its name.
func FamilyByName(name string) (Family, error) {
	for _, f := range Families() {
		if f.Name() == name {
			return f, nil
		}
	}
	return nil, fmt.Errorf("unknown kernel family %q", name)
}

// referenceTemplate holds the checking kernels.
const referenceTemplate = "reference.cu.tmpl"

// Hash identifies what decides a kernel, for the tuning cache: the
// SHA-256, in hex, of its CUDA source without comments and with white space
// normalised (csource.Normalize), its name, launch geometry (grid, block,
// dynamic shared memory) and architecture suffix. A comment or indentation
// edit in a template keeps it; any change to the code or to the geometry
// that the Go side computes alters it.
func Hash(k Kernel) string {
	h := sha256.New()
	io.WriteString(h, csource.Normalize(k.Source))
	fmt.Fprintf(h, "\x00kernel %s grid %d,%d,%d block %d,%d,%d shared %d arch-suffix %q\n",
		k.Name, k.Grid[0], k.Grid[1], k.Grid[2], k.Block[0], k.Block[1], k.Block[2], k.SharedBytes, k.ArchSuffix)
	return hex.EncodeToString(h.Sum(nil))
}

// Serves returns nil when some kernel family can compute p, otherwise a
// "not supported yet" error naming what each family lacks.
func Serves(p problem.Problem) error {
	var reasons []string
	for _, f := range Families() {
		err := f.Serves(p)
		if err == nil {
			return nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", f.Name(), err))
	}
	return fmt.Errorf("%s is not supported yet (%s)", p, strings.Join(reasons, "; "))
}

// Enumerate lists the candidates of every family that serves p, rejected ones
// included (with their reason). It returns an error when no family serves p.
func Enumerate(p problem.Problem, lim Limits) ([]Candidate, error) {
	var all []Candidate
	var reasons []string
	for _, f := range Families() {
		if err := f.Serves(p); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", f.Name(), err))
			continue
		}
		all = append(all, admitSoft(f.Space(p, lim))...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no kernel family serves %s: %v", p, reasons)
	}
	return all, nil
}

// RenderCandidate renders one candidate through its family.
func RenderCandidate(p problem.Problem, c Candidate) (Kernel, error) {
	f, err := FamilyByName(c.Family)
	if err != nil {
		return Kernel{}, err
	}
	return f.Render(p, c.Config)
}

// admitSoft lifts the soft rejections (Rejection.Soft: rules that only
// prune) of a family's candidates when they would leave it with no
// candidate at all.
func admitSoft(cands []Candidate) []Candidate {
	for _, c := range cands {
		if c.Rejected == "" {
			return cands
		}
	}
	for i, c := range cands {
		if c.Rejection.Soft {
			cands[i].Rejected, cands[i].Rejection = "", Rejection{}
		}
	}
	return cands
}
