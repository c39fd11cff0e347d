package kernels

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/convgen/convgen/nvrtc"
)

// NVRTC 11 runs one compile at a time in a process, so that the tests
// that compile in the test binary's own process (memoCompile outside
// runCompileJobs's workers) queued behind each other, a core idle, at the
// end of the run. In the test binary's own process memoCompile hands its
// compiles to a pool of NVRTC server processes instead, one per CPU: this
// test binary started with nvrtcServeEnv set to the library's path, which
// serves compiles on its stdin and stdout (serveNVRTC) instead of running
// tests. The compile is the same; only an error's type is lost (its text,
// which the tests check, is kept).
const nvrtcServeEnv = "CONVGEN_NVRTC_SERVE"

// nvrtcRequest is one compile for a server: lib.Compile(Source, Options),
// or lib.CompilePTX if PTXOnly.
type nvrtcRequest struct {
	PTXOnly bool
	Source  string
	Options nvrtc.Options
}

// nvrtcReply is a server's answer: the result, or the error's text.
type nvrtcReply struct {
	Result *nvrtc.Result
	Err    string
}

// serveNVRTC answers requests on stdin with replies on stdout, compiling
// with the NVRTC library at path, until stdin ends; it returns the exit
// status.
func serveNVRTC(path string) int {
	lib, err := nvrtc.OpenPath(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dec, enc := gob.NewDecoder(os.Stdin), gob.NewEncoder(os.Stdout)
	for {
		var req nvrtcRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		var rep nvrtcReply
		var err error
		if req.PTXOnly {
			rep.Result, err = lib.CompilePTX(req.Source, req.Options)
		} else {
			rep.Result, err = lib.Compile(req.Source, req.Options)
		}
		if err != nil {
			rep.Result, rep.Err = nil, err.Error()
		}
		if err := enc.Encode(&rep); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// nvrtcServer is one server process of the pool.
type nvrtcServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	enc *gob.Encoder
	dec *gob.Decoder
}

// nvrtcPool is the idle servers of each library path (a channel of them,
// nil where they could not be started).
var nvrtcPool = struct {
	sync.Mutex
	idle map[string]chan *nvrtcServer
	all  []*nvrtcServer
}{idle: map[string]chan *nvrtcServer{}}

// poolCompile compiles on an idle server of lib's pool, starting the pool
// on first use; ok is false where this process is not the test binary's
// own (a worker or a server) or the servers could not be started, for the
// caller to compile itself.
func poolCompile(lib *nvrtc.Library, req nvrtcRequest) (res *nvrtc.Result, err error, ok bool) {
	if os.Getenv(shardEnv) != "" || os.Getenv(nvrtcServeEnv) != "" {
		return nil, nil, false
	}
	idle := nvrtcIdle(lib.Path())
	if idle == nil {
		return nil, nil, false
	}
	s := <-idle
	defer func() { idle <- s }()
	if err := s.enc.Encode(&req); err != nil {
		return nil, fmt.Errorf("NVRTC server: %w", err), true
	}
	var rep nvrtcReply
	if err := s.dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("NVRTC server: %w", err), true
	}
	if rep.Err != "" {
		return nil, errors.New(rep.Err), true
	}
	if rep.Result.Resources == nil {
		rep.Result.Resources = map[string]nvrtc.Resources{}
	}
	return rep.Result, nil, true
}

// nvrtcIdle returns the pool of path, started with one server per CPU on
// first use, or nil if they cannot be started.
func nvrtcIdle(path string) chan *nvrtcServer {
	nvrtcPool.Lock()
	defer nvrtcPool.Unlock()
	if idle, ok := nvrtcPool.idle[path]; ok {
		return idle
	}
	n := runtime.NumCPU()
	idle := make(chan *nvrtcServer, n)
	for range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), nvrtcServeEnv+"="+path)
		cmd.Stderr = os.Stderr
		in, err1 := cmd.StdinPipe()
		out, err2 := cmd.StdoutPipe()
		if err := errors.Join(err1, err2); err != nil || cmd.Start() != nil {
			idle = nil
			break
		}
		s := &nvrtcServer{cmd: cmd, in: in, enc: gob.NewEncoder(in), dec: gob.NewDecoder(out)}
		nvrtcPool.all = append(nvrtcPool.all, s)
		idle <- s
	}
	nvrtcPool.idle[path] = idle
	return idle
}

// stopNVRTCPool ends the servers (their stdin closed, they exit).
func stopNVRTCPool() {
	nvrtcPool.Lock()
	defer nvrtcPool.Unlock()
	for _, s := range nvrtcPool.all {
		s.in.Close()
		s.cmd.Wait()
	}
	nvrtcPool.all = nil
}
