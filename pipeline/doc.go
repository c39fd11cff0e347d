// Package pipeline turns one convolution problem into a Go package: it
// replays the tuning cache's record of the problem, tunes a new one on the
// GPU (saving it to the cache), or writes an untuned package, and writes
// the package and its reports.
//
// Run does one Request; CompileOnly compiles a problem's search space on
// the CPU. Their errors carry a kind that errors.Is tells apart: ErrInvalid
// (the request must change), ErrNoRecord (nothing to replay without a
// GPU), ErrUnsupported (no kernel serves the problem) and ErrNoCandidate
// (every candidate measured failed verification); any other error is a
// failure of the environment (a cache or directory that cannot be read or
// written, NVRTC missing, an interrupted run).
package pipeline
