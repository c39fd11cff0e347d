package autotune

import (
	"math"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/problem"
)

// Status is a candidate's outcome.
type Status string

// The outcomes a candidate can have. Everything but StatusOK is a failure
// class that the report and the cache keep.
const (
	StatusOK       Status = "ok"
	StatusRejected Status = "rejected" // statically, before compiling
	StatusCompile  Status = "compile"  // NVRTC refused it
	StatusLoad     Status = "load"     // the driver refused the module
	StatusLaunch   Status = "launch"   // the launch failed (resources)
	StatusFault    Status = "fault"    // the kernel faulted, or the worker died
	StatusTimeout  Status = "timeout"  // the worker did not answer in time
	StatusWrong    Status = "wrong"    // output unwritten or error above bound
	StatusSkipped  Status = "skipped"  // not tried within the budget
)

// request is one line the tuner sends to a worker, JSON-encoded.
type request struct {
	Op string `json:"op"` // "info", "init" or "measure"

	// init
	Problem      *problem.Problem `json:"problem,omitempty"`
	SupportImage string           `json:"support_image,omitempty"` // path of the checking kernels' cubin

	// measure
	Image  string `json:"image,omitempty"` // path of the candidate's cubin
	Kernel string `json:"kernel,omitempty"`
	Grid   [3]int `json:"grid,omitempty"`
	Block  [3]int `json:"block,omitempty"`
	Shared int    `json:"shared,omitempty"`
	Seed   uint32 `json:"seed,omitempty"`
	Warmup int    `json:"warmup,omitempty"`
	Runs   int    `json:"runs,omitempty"`
	// Clusters says the kernel has compiled cluster dimensions: the worker
	// asks the driver how many of its clusters run at once.
	Clusters bool `json:"clusters,omitempty"`
	// CutoffMS, when positive, ends the timed runs early once three of
	// them are all slower than it: the candidate cannot win (the tuner
	// passes twice the best median so far).
	CutoffMS float64 `json:"cutoff_ms,omitempty"`
	Samples  int     `json:"samples,omitempty"` // outputs checked against the CPU's float64 reference
}

// response is a worker's answer to one request.
type response struct {
	Error string   `json:"error,omitempty"`
	Info  gpu.Info `json:"info,omitempty"`

	Status     Status `json:"status,omitempty"`
	Registers  int    `json:"registers,omitempty"`
	LocalBytes int    `json:"local_bytes,omitempty"`
	// MaxClusters is how many of a cluster kernel's clusters the driver
	// says run at once (0: no cluster dimensions, or not asked).
	MaxClusters int       `json:"max_clusters,omitempty"`
	RelError    float64   `json:"rel_error,omitempty"`    // vs the GPU reference, every output
	SampleError float64   `json:"sample_error,omitempty"` // vs float64 on the CPU, sampled outputs
	RefError    float64   `json:"ref_error,omitempty"`    // GPU reference vs CPU, sampled outputs
	NonFinite   int64     `json:"non_finite,omitempty"`   // outputs left NaN or infinite
	TimesMS     []float64 `json:"times_ms,omitempty"`
}

// notFinite stands for an error that is NaN or infinite, which JSON cannot
// carry: the largest float64.
const notFinite = math.MaxFloat64

// finite replaces non-finite errors with notFinite.
func (r *response) finite() {
	for _, f := range []*float64{&r.RelError, &r.SampleError, &r.RefError} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = notFinite
		}
	}
}
