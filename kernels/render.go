package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/convgen/convgen/internal/csource"
	"github.com/convgen/convgen/kernels/family"
	"github.com/convgen/convgen/problem"
)

// ReferenceName is the reference kernel's function name.
const ReferenceName = "convgen_reference"

// Reference renders the checking kernels of p's op (problem.Op): the naive
// reference in double and the fill, compare and gather kernels. For the
// forward op and dgrad the reference runs one thread per output (per step
// of a grid-stride loop) and launches ReferenceBlocks blocks; for wgrad one
// 256-thread block per dW element and then per dBias channel (a fixed
// tree, deterministic), ReferenceWgradBlocks blocks. The output, in
// float64, is in the op's output order (ReferenceOutputs elements); every
// launch has 256 threads per block and no dynamic shared memory.
func Reference(p problem.Problem) (Kernel, error) {
	var src string
	var err error
	n := ReferenceOutputs(p)
	grid := ReferenceBlocks(n)
	if p.Op == problem.OpFprop {
		data := struct {
			family.ShapeData
			Name string
		}{family.NewShapeData(p), ReferenceName}
		src, err = family.Render(referenceFS, referenceTemplate, data, checkingTemplate)
	} else {
		data := struct {
			family.ShapeData
			Name  string
			Op    problem.Op
			Dgrad bool
		}{family.NewShapeData(p), ReferenceName, p.Op, p.Op == problem.OpDgrad}
		src, err = family.Render(referenceFS, gradReferenceTemplate, data, checkingTemplate)
		if p.Op == problem.OpWgrad {
			grid = ReferenceWgradBlocks(n)
		}
	}
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{
		Family: "reference",
		Config: Config{},
		Name:   ReferenceName,
		Source: src,
		Launch: Launch{Grid: [3]int{grid, 1, 1}, Block: [3]int{256, 1, 1}},
	}, nil
}

// ReferenceOutputs is the number of float64 values the reference of p
// writes: the output's elements (fprop), dX's (dgrad), or dW's followed by
// dBias's (wgrad).
func ReferenceOutputs(p problem.Problem) int64 {
	var n int64
	for _, o := range p.Operands() {
		if o.Output {
			n += int64(o.Elems)
		}
	}
	return n
}

// ReferenceWgradBlocks is the wgrad reference's grid for outputs dW and
// dBias values: one block each, capped at CUDA's 2^31−1 blocks along x
// (the kernel's grid-stride loop covers the rest).
func ReferenceWgradBlocks(outputs int64) int {
	return int(min(outputs, 1<<31-1))
}

// ReferenceBlocks is the reference kernel's grid for outputs elements: one
// 256-thread block per 256 outputs, capped at CUDA's 2^31−1 blocks along x
// (the kernel's grid-stride loop covers the rest).
func ReferenceBlocks(outputs int64) int {
	return int(min((outputs+255)/256, 1<<31-1))
}

// The checking kernels' templates: the forward op's reference, the
// gradients', and the fill, compare and gather kernels both end with.
const (
	referenceTemplate     = "reference.cu.tmpl"
	gradReferenceTemplate = "gradref.cu.tmpl"
	checkingTemplate      = "checking.cu.tmpl"
)

//go:embed reference.cu.tmpl gradref.cu.tmpl checking.cu.tmpl
var referenceFS embed.FS

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
		err := serves(f, p)
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
		if err := serves(f, p); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", f.Name(), err))
			continue
		}
		all = append(all, family.AdmitSoft(f.Space(p, lim))...)
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
	if err := servesEpilogue(f, p); err != nil {
		return Kernel{}, err
	}
	if err := servesOut(f, p); err != nil {
		return Kernel{}, err
	}
	return f.Render(p, c.Config)
}

// serves is f.Serves(p), for a problem with an epilogue chain whether f
// applies it (servesEpilogue), and for one whose output type differs from
// the input's whether f stores it (servesOut).
func serves(f Family, p problem.Problem) error {
	if err := servesEpilogue(f, p); err != nil {
		return err
	}
	if err := servesOut(f, p); err != nil {
		return err
	}
	return f.Serves(p)
}

// servesOut returns nil when p's output has the input's type or f stores
// p's output type (family.OutPrecisionSupport), else an *OutPrecisionError.
func servesOut(f Family, p problem.Problem) error {
	if !p.OutDiffers() {
		return nil
	}
	s, ok := f.(family.OutPrecisionSupport)
	if !ok {
		return &OutPrecisionError{Family: f.Name(), Out: p.OutPrecision, In: p.Precision}
	}
	if err := s.SupportsOutPrecision(p); err != nil {
		return &OutPrecisionError{Family: f.Name(), Out: p.OutPrecision, In: p.Precision, Err: err}
	}
	return nil
}

// OutPrecisionError is a family's refusal of an output type other than
// the input's (-out-precision): the typed reason that keeps a family from
// storing the wrong type.
type OutPrecisionError struct {
	Family string
	Out    problem.Storage   // the output type asked for
	In     problem.Precision // the problem's precision
	Err    error             // the family's reason; nil when it stores only the input's type
}

func (e *OutPrecisionError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s stores only the input's element type (asked for %s output from %s; generic, igemm, wgmmaigemm and depthwise store others)", e.Family, e.Out, e.In)
	}
	return fmt.Sprintf("%s does not store %s output from %s: %v", e.Family, e.Out, e.In, e.Err)
}

func (e *OutPrecisionError) Unwrap() error { return e.Err }

// servesEpilogue returns nil when p has no epilogue chain or f applies it
// (family.EpilogueSupport), else an *EpilogueError.
func servesEpilogue(f Family, p problem.Problem) error {
	if len(p.Epilogue) == 0 {
		return nil
	}
	s, ok := f.(family.EpilogueSupport)
	if !ok {
		return &EpilogueError{Family: f.Name(), Chain: p.Epilogue.String()}
	}
	if err := s.SupportsEpilogue(p.Epilogue); err != nil {
		return &EpilogueError{Family: f.Name(), Chain: p.Epilogue.String(), Err: err}
	}
	return nil
}

// EpilogueError is a family's refusal of an epilogue chain it does not
// apply: the typed reason that keeps a family from computing a chain
// wrongly.
type EpilogueError struct {
	Family string
	Chain  string
	Err    error // the family's reason; nil when it applies no chain at all
}

func (e *EpilogueError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s applies no epilogue chain (asked for %s)", e.Family, e.Chain)
	}
	return fmt.Sprintf("%s does not apply the epilogue %s: %v", e.Family, e.Chain, e.Err)
}

func (e *EpilogueError) Unwrap() error { return e.Err }
