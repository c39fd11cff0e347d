// Package convrttest is the GPU test harness of the packages that convgen
// generates: their cuda-tagged tests call Forward, which checks a kernel
// against convrt's float64 reference, and Concurrent, which drives one
// kernel from several goroutines and streams at once (run it with -race)
// and checks Close. Everything here needs the cuda build tag and a GPU;
// without the tag the package is empty.
package convrttest
