package problem

import (
	"errors"
	"fmt"
	"strings"

	"github.com/convgen/convgen/internal/clip"
)

// Storage is an element type in memory, as an output is stored
// (Problem.OutPrecision): FP32, or the 2-byte FP16 or BF16. The zero
// Storage is "not given": the output then has the input's element type.
type Storage string

// The storage types an output may have.
const (
	StorageFP32 Storage = "fp32" // float
	StorageFP16 Storage = "fp16" // IEEE half, as 16-bit bits
	StorageBF16 Storage = "bf16" // bfloat16, as 16-bit bits
)

// Storages lists every storage type in a stable order.
var Storages = []Storage{StorageFP32, StorageFP16, StorageBF16}

// ParseStorage reads a storage type's name, case-insensitive.
func ParseStorage(s string) (Storage, error) {
	for _, st := range Storages {
		if strings.EqualFold(s, string(st)) {
			return st, nil
		}
	}
	return "", fmt.Errorf("output precision %s: must be one of %s", clip.Quote(s), joinNames(Storages))
}

// Valid reports whether s is one of Storages (the zero Storage is not).
func (s Storage) Valid() bool {
	return s == StorageFP32 || s == StorageFP16 || s == StorageBF16
}

// Bytes is the size of one element.
func (s Storage) Bytes() int {
	if s == StorageFP16 || s == StorageBF16 {
		return 2
	}
	return 4
}

// Half reports whether s is a 2-byte type (FP16 or BF16).
func (s Storage) Half() bool { return s.Bytes() == 2 }

// ErrorBound is the relative L2 error that rounding results to s alone
// may cause against float64: FP32's 1e-5, FP16's 2e-3 and BF16's 1e-2 (the
// bounds of the precisions that store them).
func (s Storage) ErrorBound() float64 {
	switch s {
	case StorageFP16:
		return FP16.ErrorBound()
	case StorageBF16:
		return BF16.ErrorBound()
	}
	return FP32.ErrorBound()
}

// Storage is the element type the precision reads and writes: FP32 for
// fp32, tf32 and 3xtf32, else FP16 or BF16.
func (p Precision) Storage() Storage {
	switch p {
	case FP16:
		return StorageFP16
	case BF16:
		return StorageBF16
	}
	return StorageFP32
}

// ErrOutPrecisionOp is Validate's refusal of an output precision other
// than the input's on a gradient op: only the forward op stores another
// type.
var ErrOutPrecisionOp = errors.New("an output precision other than the input's applies only to op=fprop")

// Out is the output's element type: OutPrecision when given, else the
// input's (Precision.Storage).
func (p Problem) Out() Storage {
	if p.OutPrecision != "" {
		return p.OutPrecision
	}
	return p.Precision.Storage()
}

// OutDiffers reports whether the output is stored in another type than
// the input's: OutPrecision given and not the precision's own storage.
// Everything that depends on the output's type asks this, so that a
// problem whose OutPrecision names the input's own type is the problem
// without one (the same kernels, cache key and package).
func (p Problem) OutDiffers() bool {
	return p.OutPrecision != "" && p.OutPrecision != p.Precision.Storage()
}

// OutElementBytes is the size of one output element (Out's).
func (p Problem) OutElementBytes() int { return p.Out().Bytes() }

// ErrorBound is the largest relative L2 error against float64 that a
// kernel for p may show: the precision's bound, or with another output
// type the looser of the precision's and the output type's (a BF16 output
// carries BF16's rounding error whatever the arithmetic before it).
func (p Problem) ErrorBound() float64 {
	b := p.Precision.ErrorBound()
	if p.OutDiffers() {
		b = max(b, p.OutPrecision.ErrorBound())
	}
	return b
}

// Canonical is p with an OutPrecision equal to the input's own type
// cleared: the form cache keys, reports and packages are made from.
func (p Problem) Canonical() Problem {
	if !p.OutDiffers() {
		p.OutPrecision = ""
	}
	return p
}
