package nvrtc

import (
	"regexp"
	"strconv"
	"strings"
)

// Resource usage comes from ptxas's verbose report. Compile passes
// "--ptxas-options=-v", which NVRTC (11.8 and newer) forwards to its built-in
// ptxas; the report is then part of the program log, e.g. (NVRTC 11.8):
//
//	ptxas info    : 0 bytes gmem
//	ptxas info    : Compiling entry function 'k' for 'sm_80'
//	ptxas info    : Function properties for k
//	ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 16 registers, 1024 bytes smem, 372 bytes cmem[0]
//
// nvcc prints the stack line without the "ptxas ." prefix, and newer ptxas
// versions add fields such as "used 1 barriers" to the "Used" line, so the
// patterns below look for the individual fields rather than whole lines.
// This is preferred to decoding the CUBIN's .nv.info sections because ptxas
// reports the spill counts, which the ELF does not record, and because the
// EIATTR encoding is undocumented.
var (
	reEntry    = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	reProps    = regexp.MustCompile(`Function properties for (\S+)`)
	reStack    = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reUsed     = regexp.MustCompile(`Used (\d+) registers`)
	reSmem     = regexp.MustCompile(`(\d+) bytes smem`)
	reAdvice   = regexp.MustCompile(`^ptxas\s+info\s*:\s*\(C\d+\)`)
	reInfoLine = regexp.MustCompile(`^ptxas\s+(info\s*:|\.\s)`)
)

// parsePtxasVerbose extracts the per-kernel resource usage from a program
// log and returns the log without ptxas's informational lines (warnings and
// errors are kept). Only entry functions (__global__ kernels) are reported;
// the stack frames of non-inlined device functions are not attributed to
// their callers, as ptxas reports them separately.
func parsePtxasVerbose(log string) (string, map[string]Resources) {
	res := make(map[string]Resources)
	type frame struct{ stack, spillSt, spillLd int }
	frames := make(map[string]frame) // by function, entry or not
	entry := ""                      // entry function being compiled
	props := ""                      // function whose properties follow

	var kept []string
	for _, line := range strings.Split(log, "\n") {
		trimmed := strings.TrimSpace(line)
		info := reInfoLine.MatchString(trimmed)
		switch {
		case !info && !reStack.MatchString(trimmed),
			reAdvice.MatchString(trimmed): // advice such as "(C7510) Potential Performance Loss: ..."
			kept = append(kept, line)
			continue
		case reEntry.MatchString(trimmed):
			entry = reEntry.FindStringSubmatch(trimmed)[1]
			if _, ok := res[entry]; !ok {
				res[entry] = Resources{}
			}
		case reProps.MatchString(trimmed):
			props = reProps.FindStringSubmatch(trimmed)[1]
		case reStack.MatchString(trimmed):
			m := reStack.FindStringSubmatch(trimmed)
			if props != "" {
				frames[props] = frame{atoi(m[1]), atoi(m[2]), atoi(m[3])}
			}
			props = ""
		case reUsed.MatchString(trimmed):
			if entry != "" {
				r := res[entry]
				r.Registers = atoi(reUsed.FindStringSubmatch(trimmed)[1])
				if m := reSmem.FindStringSubmatch(trimmed); m != nil {
					r.SharedBytes = atoi(m[1])
				}
				res[entry] = r
			}
			entry = ""
		}
	}
	for name, r := range res {
		if f, ok := frames[name]; ok {
			r.StackBytes, r.SpillStores, r.SpillLoads = f.stack, f.spillSt, f.spillLd
			res[name] = r
		}
	}

	// Drop blank lines left at the ends by the removed report.
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	for len(kept) > 0 && strings.TrimSpace(kept[0]) == "" {
		kept = kept[1:]
	}
	if len(kept) == 0 {
		return "", res
	}
	return strings.Join(kept, "\n") + "\n", res
}

// atoi parses a decimal the regular expressions have already validated.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
