package epilogue

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/convgen/convgen/internal/clip"
)

// ParseError is a chain element Parse rejects.
type ParseError struct {
	// Index is the element's position in the spec, from 1.
	Index int
	// Element is the element's text as written, without surrounding spaces.
	Element string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements the error interface. The element is quoted and clipped
// to clip.Max bytes, so the message stays one line of bounded length.
func (e *ParseError) Error() string {
	return fmt.Sprintf("epilogue: element %d %s: %s", e.Index, clip.Quote(e.Element), e.Reason)
}

// byName maps each element's name in the grammar to its Op.
var byName = func() map[string]Op {
	m := make(map[string]Op, len(names))
	for op, n := range names {
		m[n] = op
	}
	return m
}()

// knownNames is the list of names an unknown-name error offers.
var knownNames = func() string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = op.String()
	}
	return strings.Join(s, ", ")
}()

// Parse reads an epilogue spec: comma-separated elements, applied in order,
// each a name optionally followed by arguments in parentheses:
//
//	scale_shift         y = scale[k]·y + shift[k]
//	residual            y = y + z
//	residual(α)         y = y + α·z
//	relu  relu6  sigmoid  tanh  silu  hardswish  mish
//	gelu                erf form
//	gelu_tanh           tanh approximation
//	leaky_relu(α)       negative slope α
//	clamp(lo,hi)        lo ≤ hi
//
// Arguments are Go floating-point literals (an optional sign, decimal or
// hexadecimal, e.g. 0.1, -1, 1e-3, 0x1p-4), finite and within float32's
// range, and are rounded to float32. Spaces may surround elements, names
// and arguments; commas inside parentheses separate arguments. The empty
// (or all-space) spec is the empty chain, returned as nil. scale_shift and
// residual may each appear once.
//
// An error is a *ParseError naming the first bad element; for an unknown
// name it lists the known ones.
func Parse(spec string) (Chain, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var c Chain
	seen := map[Op]int{}
	for i, text := range splitTop(spec) {
		text = strings.TrimSpace(text)
		e, reason := parseElement(text)
		if reason == "" && (e.Op == ScaleShift || e.Op == Residual) {
			if j, dup := seen[e.Op]; dup {
				reason = duplicateError(e.Op, j+1).Error()
			}
			seen[e.Op] = i
		}
		if reason != "" {
			return nil, &ParseError{Index: i + 1, Element: text, Reason: reason}
		}
		c = append(c, e)
	}
	return c, nil
}

// splitTop splits s at the commas outside parentheses. An unmatched ')' does
// not change the nesting, so that the element holding it is returned whole
// and rejected by parseElement.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// parseElement reads one element (without surrounding spaces). It returns
// the element, or why text is not one.
func parseElement(text string) (Element, string) {
	if text == "" {
		return Element{}, "empty element (two commas in a row, or a comma at either end)"
	}
	name, args, hasParens, reason := splitCall(text)
	if reason != "" {
		return Element{}, reason
	}
	op, ok := byName[name]
	if !ok {
		switch {
		case name == "":
			return Element{}, "no name before the parenthesis; known names: " + knownNames
		case byName[strings.ToLower(name)] != 0:
			return Element{}, fmt.Sprintf("unknown name %s (names are lower case: %s)", clip.Quote(name), strings.ToLower(name))
		}
		return Element{}, fmt.Sprintf("unknown name %s; known names: %s", clip.Quote(name), knownNames)
	}
	e := Element{Op: op}
	switch op {
	case Residual:
		if !hasParens {
			e.Alpha = 1
			return e, ""
		}
		if len(args) != 1 {
			return Element{}, fmt.Sprintf("residual takes one argument, its scale α (residual(α)), or none for α = 1; got %d", len(args))
		}
		var err error
		if e.Alpha, err = parseNumber(args[0]); err != nil {
			return Element{}, "residual's α: " + err.Error()
		}
		return e, ""
	case LeakyReLU:
		if !hasParens || len(args) != 1 {
			return Element{}, fmt.Sprintf("leaky_relu takes one argument, its negative slope α, e.g. leaky_relu(0.01); got %d", len(args))
		}
		var err error
		if e.Alpha, err = parseNumber(args[0]); err != nil {
			return Element{}, "leaky_relu's α: " + err.Error()
		}
		return e, ""
	case Clamp:
		if !hasParens || len(args) != 2 {
			return Element{}, fmt.Sprintf("clamp takes two arguments, clamp(lo,hi); got %d", len(args))
		}
		var err error
		if e.Lo, err = parseNumber(args[0]); err != nil {
			return Element{}, "clamp's lo: " + err.Error()
		}
		if e.Hi, err = parseNumber(args[1]); err != nil {
			return Element{}, "clamp's hi: " + err.Error()
		}
		if e.Lo > e.Hi {
			return Element{}, fmt.Sprintf("clamp's lo %s exceeds its hi %s", formatNumber(e.Lo), formatNumber(e.Hi))
		}
		return e, ""
	}
	if hasParens {
		if op == GELU {
			return Element{}, "gelu takes no arguments; the tanh approximation is spelled gelu_tanh"
		}
		return Element{}, op.String() + " takes no arguments"
	}
	return e, ""
}

// splitCall splits text into a name and, if it has parentheses, their
// comma-separated arguments (spaces trimmed; none for empty parentheses).
// It returns a reason when the parentheses are malformed.
func splitCall(text string) (name string, args []string, hasParens bool, reason string) {
	open := strings.IndexByte(text, '(')
	if open < 0 {
		if strings.Contains(text, ")") {
			return "", nil, false, "')' without '('"
		}
		return text, nil, false, ""
	}
	name = strings.TrimSpace(text[:open])
	if strings.Contains(name, ")") {
		return "", nil, false, "')' without '('"
	}
	rest := text[open+1:]
	closing := strings.IndexByte(rest, ')')
	switch {
	case closing < 0:
		return "", nil, false, "'(' without ')'"
	case strings.Contains(rest[:closing], "("):
		return "", nil, false, "nested parentheses"
	case closing != len(rest)-1:
		return "", nil, false, "text after ')'"
	}
	inner := strings.TrimSpace(rest[:closing])
	if inner == "" {
		return name, nil, true, ""
	}
	args = strings.Split(inner, ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	return name, args, true, ""
}

// parseNumber reads a finite Go floating-point literal (with an optional
// sign) and rounds it to float32. A nonzero value that rounds to zero, or
// one beyond float32's range, is an error. Negative zero reads as zero, so
// that equal chains have equal canonical texts.
func parseNumber(s string) (float32, error) {
	if s == "" {
		return 0, errors.New("empty argument")
	}
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s is beyond float32's range", clip.Quote(s))
		}
		return 0, fmt.Errorf("%s is not a number (Go float syntax, e.g. 0.1, -1, 1e-3)", clip.Quote(s))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not finite", clip.Quote(s))
	}
	if v == 0 {
		if v64, _ := strconv.ParseFloat(s, 64); v64 != 0 {
			return 0, fmt.Errorf("%s is too small for float32 (it would round to 0)", clip.Quote(s))
		}
		return 0, nil // also turns -0 into 0
	}
	return float32(v), nil
}
