package kernels

import (
	"fmt"
	"hash/fnv"
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func roundUp(a, m int) int { return ceilDiv(a, m) * m }

// pitch4 is the smallest row length ≥ n, in 4-byte words, that is a multiple
// of 4 (16-byte rows) and ≡ 4 mod 8, so that 8 consecutive rows start in 8
// different 16-byte bank groups.
func pitch4(n int) int {
	p := roundUp(n, 4)
	if p%8 == 0 {
		p += 4
	}
	return p
}

func divisors(n int) []int {
	var d []int
	for i := 1; i <= n; i++ {
		if n%i == 0 {
			d = append(d, i)
		}
	}
	return d
}

// kernelSuffix is a short stable hash of a config, for kernel names.
func kernelSuffix(c Config) string {
	h := fnv.New32a()
	h.Write([]byte(c.String()))
	return fmt.Sprintf("%08x", h.Sum32())
}

// channelTiles lists the preferred channel tiles that divide k; when none
// does, the largest divisor of k that is a multiple of unit and at most 128
// (or k itself when k ≤ 128).
func channelTiles(k int, preferred []int, unit int) []int {
	var out []int
	for _, t := range preferred {
		if k%t == 0 {
			out = append(out, t)
		}
	}
	if len(out) > 0 {
		return out
	}
	if k <= 128 {
		return []int{k}
	}
	for t := 128 / unit * unit; t >= unit; t -= unit {
		if k%t == 0 {
			return []int{t}
		}
	}
	return nil
}
