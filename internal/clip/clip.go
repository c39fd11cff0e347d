// Package clip shortens user input before an error message echoes it, so
// that a message stays one readable line whatever the input's length.
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of one input that an error message echoes.
const Max = 80

// Text returns s if it is at most Max bytes long; otherwise its first Max
// bytes (cut at a rune boundary), an ellipsis and the total length.
func Text(s string) string {
	head, cut := prefix(s)
	if !cut {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", head, len(s))
}

// Quote is strconv.Quote of s, or, for s longer than Max bytes, the quoted
// first Max bytes (cut at a rune boundary), an ellipsis and the total
// length.
func Quote(s string) string {
	head, cut := prefix(s)
	if !cut {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(head), len(s))
}

// prefix returns at most Max bytes of s, not splitting a rune, and whether
// it had to cut.
func prefix(s string) (string, bool) {
	if len(s) <= Max {
		return s, false
	}
	n := Max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	if n == 0 { // no rune starts in the first Max bytes: invalid UTF-8
		n = Max
	}
	return s[:n], true
}
