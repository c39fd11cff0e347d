package family

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"text/template"

	"github.com/convgen/convgen/problem"
)

// ShapeData is the part of every template's data that describes the
// shape: embed it in the data.
type ShapeData struct {
	Shape                        string
	N, C, H, W, K, R, S, P, Q    int
	StrideH, StrideW, PadH, PadW int
	DilationH, DilationW         int
	Groups                       int
	Bias                         bool
	Layout                       problem.Layout
	NHWC, Half, BF16             bool
	// Epilogue is the chain applied before the store, with the template
	// hooks that render it (see Epilogue).
	Epilogue Epilogue
	// Out is the output's element type, with the hooks that store it
	// (see Output).
	Out Output
}

// NewShapeData is p's ShapeData.
func NewShapeData(p problem.Problem) ShapeData {
	s := p.Shape
	return ShapeData{
		Shape: s.String(),
		N:     s.N, C: s.C, H: s.H, W: s.W, K: s.K, R: s.R, S: s.S, P: s.P(), Q: s.Q(),
		StrideH: s.StrideH, StrideW: s.StrideW, PadH: s.PadH, PadW: s.PadW,
		DilationH: s.DilationH, DilationW: s.DilationW, Groups: s.Groups, Bias: s.Bias,
		Layout: p.Layout, NHWC: p.Layout == problem.NHWC,
		Half: p.Precision.ElementBytes() == 2, BF16: p.Precision == problem.BF16,
		Epilogue: NewEpilogue(p),
		Out:      NewOutput(p),
	}
}

// Partial is the template file that defines the templates "dims",
// "shape" and "flags": the shape's #define block every kernel template
// shares ({{template "shape" .}}), with ShapeData as its data.
const Partial = "shape.tmpl"

// MMAPartial is the template file that defines "mmasync", "mmastep",
// "mmaregs" and "mmaissue": the mma.sync helpers and fragment loops the
// tensor-core gradient families share (see the file's comments for what
// the including template provides).
const MMAPartial = "mmasync.tmpl"

// FoldPartial is the template file that defines "fold_tap", the folded
// data gradient's tap lookup (igemm's and wgmmaigemm's Fold, dgradwin).
const FoldPartial = "fold.tmpl"

// ClaimsPartial is the template file that defines "rl_claims", how a
// relayed-out kernel launched without its prologue has its blocks make
// the prologue's copies (wgmmaigemm's and wgradmma's Relayout).
const ClaimsPartial = "claims.tmpl"

//go:embed shape.tmpl mmasync.tmpl fold.tmpl claims.tmpl
var partialFS embed.FS

// Render executes template file of fsys (a family's embedded template) with
// data; the file may use the shared partials, Partial, MMAPartial and
// FoldPartial, and the templates that the files more of fsys define.
func Render(fsys fs.FS, file string, data any, more ...string) (string, error) {
	t, err := parse(fsys, file, more)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render template %s: %w", file, err)
	}
	return b.String(), nil
}

// parsed holds the templates that parse has parsed from an embed.FS,
// which cannot change, by file system and files: parsing had been most of
// a render's time (enumerating, checking and sampling render thousands of
// configurations). A parsed template executes safely in parallel.
var parsed sync.Map // parsedKey → *template.Template

type parsedKey struct {
	fsys  embed.FS
	files string
}

// parse parses file and more of fsys, then the shared partials.
func parse(fsys fs.FS, file string, more []string) (*template.Template, error) {
	efs, cache := fsys.(embed.FS)
	key := parsedKey{efs, strings.Join(append([]string{file}, more...), "\x00")}
	if cache {
		if t, ok := parsed.Load(key); ok {
			return t.(*template.Template), nil
		}
	}
	t, err := template.New(file).Option("missingkey=error").ParseFS(fsys, append([]string{file}, more...)...)
	if err == nil {
		t, err = t.ParseFS(partialFS, Partial, MMAPartial, FoldPartial, ClaimsPartial)
	}
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", file, err)
	}
	if cache {
		parsed.Store(key, t)
	}
	return t, nil
}
