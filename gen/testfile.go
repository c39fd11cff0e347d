package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// Shorthands for the generated tests.
func id(name string) *jen.Statement { return jen.Id(name) }
func tT() *jen.Statement            { return jen.Id("t").Op("*").Qual(testPath, "T") }

// errorfT is t.Errorf(format, args...).
func errorfT(format string, args ...jen.Code) *jen.Statement {
	return id("t").Dot("Errorf").Call(append([]jen.Code{jen.Lit(format)}, args...)...)
}

// genKernelTest renders kernel_cuda_test.go: the kernel on a real GPU
// against the float64 reference, through convrttest, and the concurrency
// test of the API.
func genKernelTest(s *spec) *jen.File {
	f := s.newFile("cuda")
	harness := func(name, load string) *jen.Statement {
		return jen.Qual(convrttestPath, name).Call(id("t"), id(load), id("errorBound"))
	}
	boundDoc := fmt.Sprintf("errorBound is the relative L2 error that precision %s allows.", s.Problem.Precision)
	if s.Problem.OutDiffers() {
		boundDoc = fmt.Sprintf("errorBound is the relative L2 error that precision %s stored as %s allows (the looser of the two bounds).", s.Problem.Precision, s.Problem.OutPrecision)
	}
	decl(f, boundDoc, jen.Const().Id("errorBound").Op("=").Add(floatLit(s.Problem.ErrorBound())))
	if op := s.Problem.Op; op != problem.OpFprop {
		genGradTest(f, s, gradMethod(op), harness)
		return f
	}
	decl(f, "TestForward checks Load's kernel on GPU 0 against the float64 reference.",
		jen.Func().Id("TestForward").Params(tT()).Block(harness("Forward", "Load")))
	ptxDoc := "TestForwardPTX checks the embedded PTX's kernel (Load's on other GPUs)."
	ptxBody := harness("Forward", "LoadPTX")
	if s.ptx == "" {
		ptxDoc += "\nThis package embeds no PTX: the test says so and is skipped."
		ptxBody = id("t").Dot("Skip").Call(jen.Lit("no PTX embedded: the kernel runs on TunedArch only"))
	}
	decl(f, ptxDoc, jen.Func().Id("TestForwardPTX").Params(tT()).Block(ptxBody))
	decl(f, "TestConcurrent checks concurrent Forward calls and Close; run it with -race.",
		jen.Func().Id("TestConcurrent").Params(tT()).Block(harness("Concurrent", "Load")))
	return f
}

// genGradTest adds the tests of a gradient op's package: its method
// (BackwardData or BackwardFilter) on the kernel Load picks and on the
// PTX's, each against the float64 reference through convrttest's harness
// of the same name.
func genGradTest(f *jen.File, s *spec, method string, harness func(name, load string) *jen.Statement) {
	decl(f, fmt.Sprintf("Test%s checks Load's kernel on GPU 0 against the float64 reference.", method),
		jen.Func().Id("Test"+method).Params(tT()).Block(harness(method, "Load")))
	ptxDoc := fmt.Sprintf("Test%sPTX checks the embedded PTX's kernel (Load's on other GPUs).", method)
	ptxBody := harness(method, "LoadPTX")
	if s.ptx == "" {
		ptxDoc += "\nThis package embeds no PTX: the test says so and is skipped."
		ptxBody = id("t").Dot("Skip").Call(jen.Lit("no PTX embedded: the kernel runs on TunedArch only"))
	}
	decl(f, ptxDoc, jen.Func().Id("Test"+method+"PTX").Params(tT()).Block(ptxBody))
}
