package tunecache

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestGzipRoundTrip(t *testing.T) {
	for _, data := range [][]byte{nil, {0}, []byte("\x7fELF\x00\xff"), bytes.Repeat([]byte(".version 8.0\n"), 10000)} {
		g := Gzip(data)
		got, err := g.Open()
		if err != nil {
			t.Fatalf("Open(Gzip(%d bytes)): %v", len(data), err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("round trip of %d bytes gave %d bytes", len(data), len(got))
		}
		if !bytes.Equal(Gzip(data), g) {
			t.Errorf("Gzip of %d bytes is not deterministic", len(data))
		}
	}
	if big := bytes.Repeat([]byte("x"), 100000); len(Gzip(big)) > 1000 {
		t.Errorf("100000 repeated bytes compress to %d", len(Gzip(big)))
	}
	if _, err := Gzipped("plain text").Open(); err == nil {
		t.Error("Open accepted bytes that are not gzip")
	}
	if _, err := Gzip(make([]byte, MaxCodeBytes+1)).Open(); err == nil || !strings.Contains(err.Error(), "uncompressed") {
		t.Errorf("Open of more than MaxCodeBytes: %v", err)
	}
}

func TestRank(t *testing.T) {
	var ms []Measured
	for i := range 30 {
		fam := []string{"direct", "mma", "wgmma"}[i%3]
		ms = append(ms, Measured{ID: fmt.Sprintf("%s/X=%d", fam, i), MedianMS: float64(100 - i)})
	}
	var s Summary
	s.Rank(ms, "direct/X=0") // the slowest
	if len(s.Top) != TopN+1 {
		t.Fatalf("Top has %d entries, want %d and the winner", len(s.Top), TopN)
	}
	if s.Top[0].ID != "wgmma/X=29" || s.Top[TopN-1].ID != "mma/X=10" || s.Top[TopN].ID != "direct/X=0" {
		t.Errorf("Top = %s ... %s, %s", s.Top[0].ID, s.Top[TopN-1].ID, s.Top[TopN].ID)
	}
	var best []string
	for _, m := range s.BestPerFamily {
		best = append(best, m.ID)
	}
	if got, want := strings.Join(best, " "), "wgmma/X=29 mma/X=28 direct/X=27"; got != want {
		t.Errorf("BestPerFamily = %s, want %s", got, want)
	}
	s.Rank(ms, "wgmma/X=29")
	if len(s.Top) != TopN {
		t.Errorf("a winner among the fastest was added again: %d entries", len(s.Top))
	}
}
