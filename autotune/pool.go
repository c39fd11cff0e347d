package autotune

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// errWorkerDied means the worker exited or stopped answering.
var errWorkerDied = errors.New("worker died")

// errWorkerTimeout means the worker did not answer within the time limit.
var errWorkerTimeout = errors.New("worker timed out")

// workerProc is one measuring child process. The tuner keeps one alive
// between candidates and starts a fresh one after a crash, a fault or a
// timeout.
type workerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // response lines (those that start with '{')
	stderr *bytes.Buffer
}

func startWorker(argv []string) (*workerProc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker %s: %w", argv[0], err)
	}
	w := &workerProc{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), stderr: &stderr}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			if line := sc.Bytes(); len(line) > 0 && line[0] == '{' {
				w.lines <- append([]byte(nil), line...)
			}
		}
		close(w.lines)
	}()
	return w, nil
}

// call sends one request and waits at most timeout for the answer.
func (w *workerProc) call(req request, timeout time.Duration) (response, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return response{}, fmt.Errorf("encode request: %w", err)
	}
	if _, err := w.stdin.Write(append(b, '\n')); err != nil {
		return response{}, fmt.Errorf("%w: %v", errWorkerDied, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case line, ok := <-w.lines:
		if !ok {
			return response{}, fmt.Errorf("%w: %s", errWorkerDied, w.lastWords())
		}
		var resp response
		if err := json.Unmarshal(line, &resp); err != nil {
			return response{}, fmt.Errorf("decode worker answer: %w", err)
		}
		return resp, nil
	case <-timer.C:
		return response{}, fmt.Errorf("%w after %s", errWorkerTimeout, timeout)
	}
}

// lastWords is the tail of the worker's stderr, for error messages.
func (w *workerProc) lastWords() string {
	_ = w.cmd.Wait()
	s := strings.TrimSpace(w.stderr.String())
	if len(s) > 400 {
		s = "…" + s[len(s)-400:]
	}
	if s == "" {
		s = w.cmd.ProcessState.String()
	}
	return s
}

// stop ends the worker, killing it if needed.
func (w *workerProc) stop() {
	w.stdin.Close()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // generous: a profiler may be flushing in the worker
		_ = w.cmd.Process.Kill()
		<-done
	}
}
