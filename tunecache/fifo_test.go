//go:build unix

package tunecache

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFO (issue 22, item 8): a FIFO as the cache is refused at once
// instead of blocking until a writer comes.
func TestFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo.json")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, err := Load(path)
		done <- err
	}()
	go func() { done <- CheckWritable(path) }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("FIFO as the cache: %v, want a not-a-regular-file error", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("reading a FIFO as the cache hangs")
		}
	}
}
