// Package csource normalises C and CUDA source text so that edits that do
// not change the program (comments, indentation, blank lines) do not change
// it either: convgen hashes kernels in this form.
package csource

import "strings"

// Normalize returns src without its comments and with its white space
// normalised: a // comment runs to the end of its line, a /* */ comment
// becomes one space (as the C preprocessor treats it), runs of spaces and
// tabs become one space, lines are trimmed and blank lines dropped.
// String and character literals are kept as they are, comment markers in
// them included, and so are backslash-newline line continuations. Two
// sources that differ only in comments and such white space normalise to
// the same text; any other change (a token, a literal) shows.
func Normalize(src string) string {
	var out, line strings.Builder
	space := false // white space pending before the next token on the line
	flush := func() {
		if s := line.String(); s != "" {
			out.WriteString(s)
			out.WriteByte('\n')
		}
		line.Reset()
		space = false
	}
	emit := func(s string) {
		if space && line.Len() > 0 {
			line.WriteByte(' ')
		}
		space = false
		line.WriteString(s)
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			flush()
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			emit("\\")
			flush()
			i += 2
		case strings.HasPrefix(src[i:], "//"):
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			i += end
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				i = len(src) // an unterminated comment runs to the end
			} else {
				i += 2 + end + 2
			}
			space = true
		case c == '"' || c == '\'':
			n := literal(src[i:])
			emit(src[i : i+n])
			i += n
		default:
			j := i + 1
			for j < len(src) && !strings.ContainsRune(" \t\r\f\v\n\\\"'/", rune(src[j])) {
				j++
			}
			emit(src[i:j])
			i = j
		}
	}
	flush()
	return out.String()
}

// literal returns the length of the string or character literal at the
// start of s, up to and including its closing quote (or the end of the
// line or of s for an unterminated one). Backslash escapes are skipped.
func literal(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+2 == len(s) && s[i+1] == '\n' { // a continuation into nothing
				return i + 1
			}
			i++
		case q:
			return i + 1
		case '\n':
			return i
		}
	}
	return len(s)
}
