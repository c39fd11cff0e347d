package pipeline

import (
	"errors"
	"fmt"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/problem"
)

// The kinds of failure, for errors.Is. An error of Run or CompileOnly
// matches at most one of them; its message is that of the failure itself.
var (
	// ErrInvalid: the request cannot be done as asked and must change,
	// e.g. several device models' records match and Device must pick one.
	ErrInvalid = errors.New("invalid request")
	// ErrNoRecord: without a GPU, the cache holds no current record of the
	// problem to replay (tune on a GPU, or ask for an untuned package).
	ErrNoRecord = errors.New("no tuning record to replay")
	// ErrUnsupported: the problem is valid, but no kernel serves it: no
	// family serves it, or the static rules reject every candidate.
	ErrUnsupported = errors.New("no kernel serves the problem")
	// ErrNoCandidate: candidates were compiled and measured, and none
	// passed verification; the message counts them by failure class.
	ErrNoCandidate = errors.New("no candidate passed verification")
)

// kindError is err marked with one of the kinds above: its message is
// err's, and errors.Is and errors.As see both.
type kindError struct{ kind, err error }

func (e kindError) Error() string   { return e.err.Error() }
func (e kindError) Unwrap() []error { return []error{e.err, e.kind} }

// mark returns err marked with kind (nil for nil).
func mark(kind, err error) error {
	if err == nil {
		return nil
	}
	return kindError{kind: kind, err: err}
}

// Served returns nil when some kernel family serves p, and otherwise an
// error, matching ErrUnsupported, that says why each family declines.
func Served(p problem.Problem) error {
	return mark(ErrUnsupported, kernels.Serves(p))
}

// checkOp refuses, as an invalid request (ErrInvalid), what no kernel
// could be asked for: an epilogue chain on a gradient op
// (problem.ErrEpilogueOp), an output precision that is not a storage type
// or, other than the input's, on a gradient op (problem.ErrOutPrecisionOp).
// Other invalid problems are Served's to refuse.
func checkOp(p problem.Problem) error {
	err := p.Validate()
	if errors.Is(err, problem.ErrEpilogueOp) || errors.Is(err, problem.ErrOutPrecisionOp) ||
		(err != nil && p.OutPrecision != "" && !p.OutPrecision.Valid()) {
		return mark(ErrInvalid, err)
	}
	return nil
}

// tuneError classifies the error of a search that res (nil when none ran)
// holds the trials of: when every candidate was rejected statically (or
// left out), nothing could be measured and the problem is unsupported;
// when some were compiled or measured and none passed, no candidate
// passed verification. Other errors (no worker, no GPU, interrupted) are
// returned as they are.
func tuneError(res *autotune.Result, err error) error {
	err = fmt.Errorf("tune: %w", err)
	if errors.Is(err, autotune.ErrBadPin) {
		return mark(ErrInvalid, err)
	}
	if errors.Is(err, autotune.ErrBudget) {
		return mark(ErrNoCandidate, err)
	}
	if res == nil || len(res.Trials) == 0 {
		return err
	}
	for _, t := range res.Trials {
		if t.Status != autotune.StatusRejected && t.Status != autotune.StatusSkipped {
			return mark(ErrNoCandidate, err)
		}
	}
	return mark(ErrUnsupported, err)
}
