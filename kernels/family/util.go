package family

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/convgen/convgen/problem"
)

// CeilDiv is a / b rounded up.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// RoundUp is a rounded up to a multiple of m.
func RoundUp(a, m int) int { return CeilDiv(a, m) * m }

// Pitch4 is the smallest row length ≥ n, in 4-byte words, that is a multiple
// of 4 (16-byte rows) and ≡ 4 mod 8, so that 8 consecutive rows start in 8
// different 16-byte bank groups.
func Pitch4(n int) int {
	p := RoundUp(n, 4)
	if p%8 == 0 {
		p += 4
	}
	return p
}

// Divisors lists the divisors of n in increasing order (none for n < 1),
// in O(√n) steps: n may be as large as a shape allows.
func Divisors(n int) []int {
	var low, high []int
	for i := 1; i <= n/i; i++ {
		if n%i == 0 {
			low = append(low, i)
			if i != n/i {
				high = append(high, n/i)
			}
		}
	}
	for i := len(high) - 1; i >= 0; i-- {
		low = append(low, high[i])
	}
	return low
}

// KernelSuffix is a short stable hash of a config, for kernel names.
func KernelSuffix(c Config) string {
	h := fnv.New32a()
	h.Write([]byte(c.String()))
	return fmt.Sprintf("%08x", h.Sum32())
}

// ChannelTiles lists the preferred channel tiles that divide k; when none
// does, the largest divisor of k that is a multiple of unit and at most 128
// (or k itself when k ≤ 128).
func ChannelTiles(k int, preferred []int, unit int) []int {
	var out []int
	for _, t := range preferred {
		if k%t == 0 {
			out = append(out, t)
		}
	}
	if len(out) > 0 {
		return out
	}
	if k <= 128 {
		return []int{k}
	}
	for t := 128 / unit * unit; t >= unit; t -= unit {
		if k%t == 0 {
			return []int{t}
		}
	}
	return nil
}

// OneGroup is the specialised families' refusal of grouped convolution.
func OneGroup(family string, s problem.Shape) error {
	if s.Groups != 1 {
		return fmt.Errorf("%s serves only groups=1, not groups=%d (generic serves grouped convolution)", family, s.Groups)
	}
	return nil
}

// Index32 is the specialised families' refusal of shapes that need 64-bit
// offsets (problem.Shape.Needs64BitIndex): their kernels index with 32-bit
// integers.
func Index32(family string, s problem.Shape) error {
	if s.Needs64BitIndex() {
		return fmt.Errorf("%s indexes with 32-bit integers; generic serves tensors of 2^31 elements or more", family)
	}
	return nil
}

// HalfIO says whether p's tensors are 2-byte (fp16, bf16).
func HalfIO(p problem.Problem) bool {
	return p.Precision == problem.FP16 || p.Precision == problem.BF16
}

// PrecisionTag is a precision's name as it may appear in an identifier.
func PrecisionTag(p problem.Precision) string {
	if p == problem.TF32x3 {
		return "tf32x3"
	}
	return string(p)
}

// ErrOtherOp matches (errors.Is) a family's refusal of a problem whose op
// it does not compute (OnlyOp, Forward, OtherOp), as against a refusal of
// the shape, precision or layout: listings leave those out.
var ErrOtherOp = errors.New("the family computes another op")

// opRefusal is an ErrOtherOp with its own message.
type opRefusal struct{ msg string }

func (e opRefusal) Error() string        { return e.msg }
func (e opRefusal) Is(target error) bool { return target == ErrOtherOp }

// OtherOp is a refusal of p's op, with the message format gives
// (errors.Is(err, ErrOtherOp)).
func OtherOp(format string, args ...any) error {
	return opRefusal{fmt.Sprintf(format, args...)}
}

// OnlyOp is a gradient family's refusal of every op but its own.
func OnlyOp(family string, op problem.Op, p problem.Problem) error {
	if p.Op != op {
		return OtherOp("%s computes only op=%s, not op=%s", family, op, p.Op)
	}
	return nil
}

// Gradient is a gradient family's first test in Serves: p asks for its op
// (OnlyOp) and is a valid problem.
func Gradient(family string, op problem.Op, p problem.Problem) error {
	if err := OnlyOp(family, op, p); err != nil {
		return err
	}
	return p.Validate()
}

// Forward is the forward families' refusal of a gradient op
// (problem.Op): their kernels compute the forward convolution only; the
// dgrad and wgrad families serve the gradients.
func Forward(family string, p problem.Problem) error {
	if p.Op != problem.OpFprop {
		return OtherOp("%s computes only op=fprop, not op=%s (the %s family serves it)", family, p.Op, p.Op)
	}
	return nil
}
