package pipeline

import (
	"time"

	"github.com/convgen/convgen/autotune"
	"github.com/convgen/convgen/internal/version"
	"github.com/convgen/convgen/kernels"
	"github.com/convgen/convgen/report"
	"github.com/convgen/convgen/tunecache"
)

// newRecord makes the tuning record of a finished search: the key, the
// winner's and the fallback's launches, kernel hashes and images, and the
// summary the report is built from.
func newRecord(res *autotune.Result, key tunecache.Key, command string, started time.Time, took time.Duration) tunecache.Record {
	timing := func(t autotune.Trial) tunecache.Timing {
		return tunecache.Timing{Family: t.Family, Config: t.Config, MedianMS: t.MedianMS, SpreadMS: t.P90MS - t.P10MS, RelError: t.RelError}
	}
	w := res.Winner
	rec := tunecache.Record{Key: key, ConvgenVersion: version.Convgen, Winner: timing(*w), KernelSHA256: kernels.Hash(res.Kernel),
		Kernel: res.Kernel.Name, Launch: res.Kernel.Launch,
		Arch: res.Arch, CUBIN: tunecache.Gzip(res.CUBIN), PTX: tunecache.Gzip([]byte(res.PTX)), Command: command}
	if fb := res.Fallback; fb != nil {
		rec.Fallback = &tunecache.Fallback{Timing: timing(*fb.Trial), KernelSHA256: kernels.Hash(fb.Kernel), Kernel: fb.Kernel.Name,
			Launch: fb.Kernel.Launch, Arch: fb.Arch, PTX: tunecache.Gzip([]byte(fb.PTX))}
	}
	rec.Summary = summarize(res.Trials, w.ID)
	rec.Summary.TunedAt, rec.Summary.DurationS = started.UTC().Truncate(time.Second), took.Round(time.Second).Seconds()
	rec.Summary.DeviceArch, rec.Summary.ClockMHz, rec.Summary.MemoryGBps = res.Device.Arch, res.Device.ClockMHz, res.Device.MemoryGBps
	rec.Summary.TieNote = res.TieNote
	rec.Summary.SearchRevision = autotune.SearchRevision
	ph := res.Phases
	rec.Summary.Phases = tunecache.Phases{SetupS: roundS(ph.Setup), EnumerateS: roundS(ph.Enumerate),
		CompileS: roundS(ph.Compile), MeasureS: roundS(ph.Measure)}
	if res.Fallback == nil {
		rec.Summary.NoFallback = res.FallbackNote
	}
	return rec
}

// candidates converts a search's trials for candidates.csv and the chart.
func candidates(trials []autotune.Trial) []report.Candidate {
	out := make([]report.Candidate, len(trials))
	for i, t := range trials {
		out[i] = report.Candidate{ID: t.ID, Family: t.Family, Status: string(t.Status), Reason: t.Reason,
			Registers: t.Registers, SpillBytes: t.SpillStores, SharedBytes: t.SharedBytes}
		if t.Status == autotune.StatusOK {
			out[i].MedianMS, out[i].P10MS, out[i].P90MS, out[i].RelError = t.MedianMS, t.P10MS, t.P90MS, t.RelError
		}
	}
	return out
}

// roundS is d in seconds, to the millisecond.
func roundS(d time.Duration) float64 { return d.Round(time.Millisecond).Seconds() }

// summarize counts trials per status and ranks the measured ones.
func summarize(trials []autotune.Trial, winner string) tunecache.Summary {
	var s tunecache.Summary
	counts := map[autotune.Status]int{}
	var measured []tunecache.Measured
	for _, t := range trials {
		counts[t.Status]++
		if t.Status == autotune.StatusOK {
			measured = append(measured, tunecache.Measured{ID: t.ID, MedianMS: t.MedianMS, P10MS: t.P10MS, P90MS: t.P90MS,
				Runs: t.Runs, RelError: t.RelError, Registers: t.Registers, SpillStores: t.SpillStores, SpillLoads: t.SpillLoads,
				SharedBytes: t.SharedBytes, Threads: t.Threads, MaxClusters: t.MaxClusters})
		}
	}
	for _, st := range []autotune.Status{autotune.StatusOK, autotune.StatusRejected, autotune.StatusCompile,
		autotune.StatusLoad, autotune.StatusLaunch, autotune.StatusFault, autotune.StatusTimeout,
		autotune.StatusWrong, autotune.StatusSkipped} {
		if counts[st] > 0 {
			s.Counts = append(s.Counts, tunecache.Count{Status: string(st), N: counts[st]})
		}
	}
	s.Rank(measured, winner)
	return s
}
