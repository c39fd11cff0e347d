package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/convgen/convgen/gpu"
	"github.com/convgen/convgen/pipeline"
)

// generate runs what the command line asks: -compile-only, -list, the
// package (pipeline.Run), or with -train the training package
// (pipeline.RunTrain).
func generate(ctx context.Context, c config, stdout, stderr io.Writer) error {
	if err := pipeline.Served(c.problem); err != nil && !c.train { // RunTrain checks each op, naming it
		return err
	}
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	if c.compile {
		return pipeline.CompileOnly(ctx, pipeline.CompileRequest{Problem: c.problem, Arch: c.arch, Pins: c.pin, Jobs: c.jobs,
			CompileTimeout: c.compileTO, SourceDir: c.sourceDir, Log: stdout, Progress: progress})
	}
	if c.list {
		return list(c, stdout)
	}
	if !gpu.Available() {
		switch {
		case len(c.pin) > 0:
			return usageError{fmt.Errorf("-pin measures the pinned candidates on a GPU, and %v (-compile-only compiles them on the CPU)", gpu.ErrNoCUDA)}
		case c.retune:
			return usageError{fmt.Errorf("-retune tunes on a GPU, and %v", gpu.ErrNoCUDA)}
		case len(c.tuningSet) > 0:
			fmt.Fprintf(stderr, "convgen: %s: no effect without a GPU, where the package is replayed from the cache\n", strings.Join(c.tuningSet, ", "))
		}
	}
	req, err := c.request(stdout, progress)
	if err != nil {
		return err
	}
	if c.train {
		_, err = pipeline.RunTrain(ctx, req)
		return err
	}
	_, err = pipeline.Run(ctx, req)
	return err
}

// request is the pipeline's request for c's package; log gets the steps'
// lines, progress the tuner's.
func (c config) request(log, progress io.Writer) (pipeline.Request, error) {
	r := pipeline.Request{Problem: c.problem, Out: c.out, Into: c.into, Pkg: c.pkg, Cache: c.cache, ReportDir: c.reportDir, Torch: c.torch,
		Arch: c.arch, Device: c.device, Retune: c.retune, Untuned: c.untuned, Pins: c.pin,
		Tuning:  pipeline.Tuning{Trials: c.trials, Time: c.budget, Seed: c.seed, Jobs: c.jobs, Runs: c.runs, CompileTimeout: c.compileTO},
		Command: c.command(), Log: log, Progress: progress}
	if gpu.Available() {
		argv, err := workerArgv()
		if err != nil {
			return pipeline.Request{}, err
		}
		r.Worker = argv
	}
	return r, nil
}

// workerArgv starts this binary as a tuning worker.
func workerArgv() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the GPU worker: %w", err)
	}
	return []string{exe, workerArg}, nil
}
