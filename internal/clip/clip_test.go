package clip

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortUnchanged(t *testing.T) {
	for _, s := range []string{"", "abc", strings.Repeat("x", Max), "a\nb"} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q, want it unchanged", s, got)
		}
		if got, want := Quote(s), strconv.Quote(s); got != want {
			t.Errorf("Quote(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestLongClipped(t *testing.T) {
	long := strings.Repeat("y", 128<<10)
	for name, got := range map[string]string{"Text": Text(long), "Quote": Quote(long)} {
		if len(got) > Max+30 {
			t.Errorf("%s of %d bytes is %d bytes long: %q", name, len(long), len(got), got)
		}
		if !strings.Contains(got, "…") || !strings.Contains(got, "(131072 bytes)") {
			t.Errorf("%s = %q: want an ellipsis and the total length", name, got)
		}
		if !strings.Contains(got, strings.Repeat("y", Max)) {
			t.Errorf("%s = %q: want the first %d bytes", name, got, Max)
		}
	}
	if got, want := Quote(long), `"`+strings.Repeat("y", Max)+`"… (131072 bytes)`; got != want {
		t.Errorf("Quote = %q, want %q", got, want)
	}
}

func TestRuneBoundary(t *testing.T) {
	s := "a" + strings.Repeat("é", Max) // the 2-byte runes straddle byte Max
	got := Text(s)
	head, _, _ := strings.Cut(got, "…")
	if !utf8.ValidString(head) || len(head) > Max || len(head) < Max-1 {
		t.Errorf("Text cut %q into %q (%d bytes): want valid UTF-8 of %d or %d bytes", s, head, len(head), Max-1, Max)
	}
}

func TestInvalidUTF8(t *testing.T) {
	s := strings.Repeat("\x80", 200)
	got := Quote(s)
	if len(got) > 4*Max+30 || !strings.Contains(got, "(200 bytes)") {
		t.Errorf("Quote of 200 continuation bytes = %q", got)
	}
}
