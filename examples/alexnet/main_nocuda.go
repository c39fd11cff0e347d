//go:build !cuda

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "alexnet: this example runs the kernels on a GPU: build it with -tags cuda (go build -tags cuda ./examples/alexnet) and run it on a machine with an NVIDIA GPU")
	os.Exit(1)
}
