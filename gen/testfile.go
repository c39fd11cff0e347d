package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"

	"github.com/convgen/convgen/problem"
)

// testSamples is how many random outputs the generated test checks against
// the CPU reference in each run, besides the corners.
const testSamples = 4096

// Shorthands for the generated test.
func id(name string) *jen.Statement { return jen.Id(name) }
func tT() *jen.Statement            { return jen.Id("t").Op("*").Qual(testPath, "T") }

// fatalf is t.Fatalf(format, args...).
func fatalf(format string, args ...jen.Code) *jen.Statement {
	return id("t").Dot("Fatalf").Call(append([]jen.Code{jen.Lit(format)}, args...)...)
}

// errorfT is t.Errorf(format, args...).
func errorfT(format string, args ...jen.Code) *jen.Statement {
	return id("t").Dot("Errorf").Call(append([]jen.Code{jen.Lit(format)}, args...)...)
}

// check is `if err := call; err != nil { t.Fatalf(what+": %v", err) }`.
func check(call jen.Code, format string, args ...jen.Code) *jen.Statement {
	return jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(
		fatalf(format+": %v", append(args, jen.Err())...),
	)
}

// deferCheck is `defer func() { if err := call; err != nil { t.Errorf(what+": %v", err) } }()`.
func deferCheck(call jen.Code, what string) *jen.Statement {
	return jen.Defer().Func().Params().Block(
		jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(
			errorfT(what+": %v", jen.Err()),
		),
	).Call()
}

// indexFuncs returns the offset functions of the three tensors for the
// layout, with their doc comments.
func indexFuncs(l problem.Layout) []struct {
	name, doc string
	params    []string
	expr      jen.Code
} {
	type fn = struct {
		name, doc string
		params    []string
		expr      jen.Code
	}
	// nest is ((a*B+b)*C+c)*D + d for dims (a, B), (b, C), (c, D), d.
	nest := func(first string, rest ...[2]string) jen.Code {
		e := id(first)
		for i, r := range rest {
			if i > 0 {
				e = jen.Parens(e)
			}
			e = e.Op("*").Id(r[0]).Op("+").Id(r[1])
		}
		return e
	}
	cg := "(C/Groups)"
	if l == problem.NHWC {
		return []fn{
			{"inputAt", "inputAt is the offset of in[n][c][h][w] in the NHWC input.", []string{"n", "c", "h", "w"},
				nest("n", [2]string{"H", "h"}, [2]string{"W", "w"}, [2]string{"C", "c"})},
			{"filterAt", "filterAt is the offset of filter[k][c][r][s] in the KRSC filter; c counts\nwithin k's channel group.", []string{"k", "c", "r", "s"},
				nest("k", [2]string{"R", "r"}, [2]string{"S", "s"}, [2]string{cg, "c"})},
			{"outputAt", "outputAt is the offset of out[n][k][p][q] in the NPQK output.", []string{"n", "k", "p", "q"},
				nest("n", [2]string{"P", "p"}, [2]string{"Q", "q"}, [2]string{"K", "k"})},
		}
	}
	return []fn{
		{"inputAt", "inputAt is the offset of in[n][c][h][w] in the NCHW input.", []string{"n", "c", "h", "w"},
			nest("n", [2]string{"C", "c"}, [2]string{"H", "h"}, [2]string{"W", "w"})},
		{"filterAt", "filterAt is the offset of filter[k][c][r][s] in the KCRS filter; c counts\nwithin k's channel group.", []string{"k", "c", "r", "s"},
			nest("k", [2]string{cg, "c"}, [2]string{"R", "r"}, [2]string{"S", "s"})},
		{"outputAt", "outputAt is the offset of out[n][k][p][q] in the NKPQ output.", []string{"n", "k", "p", "q"},
			nest("n", [2]string{"K", "k"}, [2]string{"P", "p"}, [2]string{"Q", "q"})},
	}
}

// genKernelTest renders kernel_cuda_test.go: the kernel on a real GPU
// against a float64 reference.
func genKernelTest(s *spec) *jen.File {
	f := s.newFile("cuda")
	e := s.elem
	bias := s.shape.Bias
	dev := func(name string) *jen.Statement { return jen.Id("PtrOf").Call(id(name)) }

	decl(f, fmt.Sprintf("errorBound is the largest relative L2 error ‖out−ref‖/‖ref‖ against the\nfloat64 reference that precision %s allows.", s.Problem.Precision),
		jen.Const().Id("errorBound").Op("=").Add(floatLit(s.Problem.Precision.ErrorBound())))
	decl(f, "samples is how many random outputs each run checks against the reference,\nbesides the corners.",
		jen.Const().Id("samples").Op("=").Lit(testSamples))
	declElem(f, e)

	// TestForward.
	body := []jen.Code{
		jen.Qual(runtimePath, "LockOSThread").Call(),
		jen.Defer().Qual(runtimePath, "UnlockOSThread").Call(),
		jen.List(id("devices"), jen.Err()).Op(":=").Add(cu("NumDevices")).Call(),
		ifErr(fatalf("count CUDA devices: %v", jen.Err())),
		jen.If(id("devices").Op("==").Lit(0)).Block(
			id("t").Dot("Fatal").Call(jen.Lit("no CUDA device: this test needs a GPU")),
		),
		jen.List(id("dev"), jen.Err()).Op(":=").Add(cu("GetDevice")).Call(jen.Lit(0)),
		ifErr(fatalf("device 0: %v", jen.Err())),
		jen.List(id("ctx"), jen.Err()).Op(":=").Id("dev").Dot("MakeContext").Call(cu("SchedAuto")),
		ifErr(fatalf("make a context on device 0: %v", jen.Err())),
		deferCheck(id("ctx").Dot("Destroy").Call(), "destroy context"),
		jen.Line(),
		jen.List(id("k"), jen.Err()).Op(":=").Id("load").Call(),
		ifErr(fatalf("load: %v", jen.Err())),
		deferCheck(id("k").Dot("Close").Call(), "Close"),
		jen.List(id("stream"), jen.Err()).Op(":=").Add(cu("MakeStream")).Call(cu("NonBlocking")),
		ifErr(fatalf("make stream: %v", jen.Err())),
		deferCheck(id("stream").Dot("Destroy").Call(), "destroy stream"),
		jen.Line(),
		id("seed").Op(":=").Uint64().Call(jen.Qual(timePath, "Now").Call().Dot("UnixNano").Call()),
		id("t").Dot("Logf").Call(jen.Lit("random seed %d"), id("seed")),
		id("rng").Op(":=").Qual(randPath, "New").Call(jen.Qual(randPath, "NewPCG").Call(id("seed"), id("seed"))),
		id("filter").Op(":=").Id("random").Call(id("rng"), id("FilterElems"), jen.Lit(-1), jen.Lit(1)),
		id("dFilter").Op(":=").Id("alloc").Call(id("t"), id("FilterElems")),
		jen.Defer().Id("free").Call(id("t"), id("dFilter")),
		id("toDevice").Call(id("t"), id("dFilter"), id("filter")),
	}
	biasArg := jen.Lit(0) // the problem has no bias
	refArgs := []jen.Code{id("out"), id("in"), id("filter")}
	if bias {
		body = append(body,
			id("bias").Op(":=").Id("random").Call(id("rng"), id("BiasElems"), jen.Lit(-1), jen.Lit(1)),
			id("dBias").Op(":=").Id("alloc").Call(id("t"), id("BiasElems")),
			jen.Defer().Id("free").Call(id("t"), id("dBias")),
			id("toDevice").Call(id("t"), id("dBias"), id("bias")),
		)
		biasArg = dev("dBias")
		refArgs = append(refArgs, id("bias"))
	}
	body = append(body,
		id("dIn").Op(":=").Id("alloc").Call(id("t"), id("InputElems")),
		jen.Defer().Id("free").Call(id("t"), id("dIn")),
		id("dOut").Op(":=").Id("alloc").Call(id("t"), id("OutputElems")),
		jen.Defer().Id("free").Call(id("t"), id("dOut")),
		id("out").Op(":=").Make(jen.Index().Id("elem"), id("OutputElems")),
		jen.Line(),
		jen.Comment("Two runs with fresh inputs: the output must follow the input."),
		jen.For(id("run").Op(":=").Lit(1), id("run").Op("<=").Lit(2), id("run").Op("++")).Block(
			id("in").Op(":=").Id("random").Call(id("rng"), id("InputElems"), jen.Lit(0), jen.Lit(1)),
			id("toDevice").Call(id("t"), id("dIn"), id("in")),
			check(cu(e.memset).Call(id("dOut"), id("nanBits"), id("OutputElems")), "run %d: poison the output", id("run")),
			jen.Comment("The copies and the memset ran on the legacy default stream, which"),
			jen.Comment("a non-blocking stream does not wait for."),
			check(cu("Synchronize").Call(), "run %d: synchronize before the launch", id("run")),
			check(id("k").Dot("Forward").Call(jen.Id("StreamOf").Call(id("stream")), dev("dOut"), dev("dIn"), dev("dFilter"), biasArg),
				"run %d: Forward", id("run")),
			check(id("stream").Dot("Synchronize").Call(), "run %d: synchronize the stream", id("run")),
			id("fromDevice").Call(id("t"), id("out"), id("dOut")),
			id("checkFinite").Call(id("t"), id("run"), id("out")),
			id("checkReference").Call(append([]jen.Code{id("t"), id("run"), id("rng")}, refArgs...)...),
		),
	)
	forwardDoc := "TestForward runs the kernel twice on GPU 0, on fresh random data each time\n" +
		"(input uniform in [0,1), filter and bias in [-1,1)), and checks that it\n" +
		"writes every output and matches a float64 reference computed on the CPU."
	if e.helpers != nil {
		forwardDoc = wrap(fmt.Sprintf("TestForward runs the kernel twice on GPU 0, on fresh random data each time "+
			"(input uniform in [0,1), filter and bias in [-1,1), drawn as float32 and rounded to %s), "+
			"and checks that it writes every output and matches a float64 reference computed on the CPU "+
			"from the rounded data.", s.Problem.Precision))
	}
	decl(f, forwardDoc, jen.Func().Id("TestForward").Params(tT()).Block(
		id("testForward").Call(id("t"), id("Load")),
	))
	ptxDoc := "TestForwardPTX runs the same checks on the kernel of the embedded PTX, which\n" +
		"Load uses on GPUs other than TunedArch's, compiled by the driver for GPU 0."
	ptxBody := []jen.Code{id("testForward").Call(id("t"), id("LoadPTX"))}
	if s.ptx == "" {
		ptxDoc += "\nThis package embeds no PTX: the test says so and is skipped."
		ptxBody = []jen.Code{id("t").Dot("Skip").Call(jen.Lit("no PTX embedded: the kernel runs on TunedArch only"))}
	}
	decl(f, ptxDoc, jen.Func().Id("TestForwardPTX").Params(tT()).Block(ptxBody...))
	decl(f, "testForward loads the kernel with load and checks it as TestForward says.",
		jen.Func().Id("testForward").Params(tT(), id("load").Func().Params().Params(jen.Op("*").Id("Kernel"), jen.Error())).Block(body...))

	// checkFinite.
	decl(f, "checkFinite fails the test if an output is NaN or infinite: a NaN left\nfrom the poison means the kernel skipped that element.",
		jen.Func().Id("checkFinite").Params(tT(), id("run").Int(), id("out").Index().Id("elem")).Block(
			id("t").Dot("Helper").Call(),
			jen.List(id("bad"), id("first")).Op(":=").List(jen.Lit(0), jen.Lit(-1)),
			jen.For(jen.List(id("i"), id("e")).Op(":=").Range().Id("out")).Block(
				jen.If(id("v").Op(":=").Id("fromElem").Call(id("e")), jen.Qual(mathPath, "IsNaN").Call(id("v")).Op("||").Qual(mathPath, "IsInf").Call(id("v"), jen.Lit(0))).Block(
					jen.If(id("bad").Op("==").Lit(0)).Block(id("first").Op("=").Id("i")),
					id("bad").Op("++"),
				),
			),
			jen.If(id("bad").Op(">").Lit(0)).Block(
				fatalf("run %d: %d of %d outputs are not finite, the first out[%d] = "+e.showVerb+": the kernel left them unwritten or overflowed",
					append([]jen.Code{id("run"), id("bad"), jen.Len(id("out")), id("first")}, e.show(id("out").Index(id("first")))...)...),
			),
		))

	// checkReference.
	refParams := []jen.Code{tT(), id("run").Int(), id("rng").Op("*").Qual(randPath, "Rand"), jen.List(refArgs...).Index().Id("elem")}
	decl(f, "checkReference compares a sample of outputs, the corners and random ones,\n"+
		"with the float64 reference, and fails the test if their relative L2 error\nexceeds errorBound.",
		jen.Func().Id("checkReference").Params(refParams...).Block(
			id("t").Dot("Helper").Call(),
			id("points").Op(":=").Id("corners").Call(),
			jen.For(jen.Range().Id("samples")).Block(
				id("points").Op("=").Append(id("points"), id("at").Values(
					id("rng").Dot("IntN").Call(id("N")), id("rng").Dot("IntN").Call(id("K")),
					id("rng").Dot("IntN").Call(id("P")), id("rng").Dot("IntN").Call(id("Q")))),
			),
			jen.Var().List(id("diff2"), id("ref2"), id("worst")).Float64(),
			jen.Var().Id("worstAt").Id("at"),
			jen.For(jen.List(jen.Id("_"), id("pt")).Op(":=").Range().Id("points")).Block(
				id("want").Op(":=").Id("reference").CallFunc(func(g *jen.Group) {
					g.Id("in")
					g.Id("filter")
					if bias {
						g.Id("bias")
					}
					g.Id("pt")
				}),
				id("got").Op(":=").Id("fromElem").Call(id("out").Index(id("outputAt").Call(
					id("pt").Dot("n"), id("pt").Dot("k"), id("pt").Dot("p"), id("pt").Dot("q")))),
				id("d").Op(":=").Id("got").Op("-").Id("want"),
				id("diff2").Op("+=").Id("d").Op("*").Id("d"),
				id("ref2").Op("+=").Id("want").Op("*").Id("want"),
				jen.If(jen.Qual(mathPath, "Abs").Call(id("d")).Op(">").Id("worst")).Block(
					jen.List(id("worst"), id("worstAt")).Op("=").List(jen.Qual(mathPath, "Abs").Call(id("d")), id("pt")),
				),
			),
			id("rel").Op(":=").Qual(mathPath, "Sqrt").Call(id("diff2").Op("/").Id("ref2")),
			jen.If(id("ref2").Op("==").Lit(0)).Block(
				id("rel").Op("=").Qual(mathPath, "Sqrt").Call(id("diff2")).Comment("an all-zero reference: use the absolute error"),
			),
			id("t").Dot("Logf").Call(jen.Lit("run %d: relative L2 error %.3g over %d outputs (bound %g)"), id("run"), id("rel"), jen.Len(id("points")), id("errorBound")),
			jen.Comment("Written so that a NaN error fails too."),
			jen.If(jen.Op("!").Parens(id("rel").Op("<=").Id("errorBound"))).Block(
				id("w").Op(":=").Id("worstAt"),
				errorfT("run %d: relative L2 error %.3g exceeds %g; the worst output out[n=%d][k=%d][p=%d][q=%d] is "+e.showVerb+", the reference %v",
					slices.Concat(
						[]jen.Code{id("run"), id("rel"), id("errorBound"), id("w").Dot("n"), id("w").Dot("k"), id("w").Dot("p"), id("w").Dot("q")},
						e.show(id("out").Index(id("outputAt").Call(id("w").Dot("n"), id("w").Dot("k"), id("w").Dot("p"), id("w").Dot("q")))),
						[]jen.Code{id("reference").CallFunc(func(g *jen.Group) {
							g.Id("in")
							g.Id("filter")
							if bias {
								g.Id("bias")
							}
							g.Id("w")
						})},
					)...),
			),
		))

	decl(f, "at is the position of one output element.",
		jen.Type().Id("at").Struct(jen.List(id("n"), id("k"), id("p"), id("q")).Int()))
	decl(f, "corners lists the four output corners of the first and the last image, in\nthe first and the last output channel.",
		jen.Func().Id("corners").Params().Index().Id("at").Block(
			jen.Var().Id("pts").Index().Id("at"),
			jen.For(jen.List(jen.Id("_"), id("n")).Op(":=").Range().Index().Int().Values(jen.Lit(0), id("N").Op("-").Lit(1))).Block(
				jen.For(jen.List(jen.Id("_"), id("k")).Op(":=").Range().Index().Int().Values(jen.Lit(0), id("K").Op("-").Lit(1))).Block(
					jen.For(jen.List(jen.Id("_"), id("p")).Op(":=").Range().Index().Int().Values(jen.Lit(0), id("P").Op("-").Lit(1))).Block(
						jen.For(jen.List(jen.Id("_"), id("q")).Op(":=").Range().Index().Int().Values(jen.Lit(0), id("Q").Op("-").Lit(1))).Block(
							id("pts").Op("=").Append(id("pts"), id("at").Values(id("n"), id("k"), id("p"), id("q"))),
						),
					),
				),
			),
			jen.Return(id("pts")),
		))

	// reference.
	refDoc := "reference computes out[n][k][p][q] in float64: the sum over k's channel\n" +
		"group and the filter taps that land inside the input (padding reads as\nzero)"
	sum := jen.Id("sum").Op(":=").Lit(0.0)
	if bias {
		refDoc += ", plus the bias"
		sum = jen.Id("sum").Op(":=").Id("fromElem").Call(id("bias").Index(id("pt").Dot("k")))
	}
	decl(f, refDoc+".",
		jen.Func().Id("reference").ParamsFunc(func(g *jen.Group) {
			if bias {
				g.List(id("in"), id("filter"), id("bias")).Index().Id("elem")
			} else {
				g.List(id("in"), id("filter")).Index().Id("elem")
			}
			g.Id("pt").Id("at")
		}).Float64().Block(
			sum,
			id("group").Op(":=").Id("pt").Dot("k").Op("/").Parens(id("K").Op("/").Id("Groups")),
			jen.For(id("c").Op(":=").Lit(0), id("c").Op("<").Id("C").Op("/").Id("Groups"), id("c").Op("++")).Block(
				id("ci").Op(":=").Id("group").Op("*").Parens(id("C").Op("/").Id("Groups")).Op("+").Id("c"),
				jen.For(id("r").Op(":=").Lit(0), id("r").Op("<").Id("R"), id("r").Op("++")).Block(
					id("h").Op(":=").Id("pt").Dot("p").Op("*").Id("StrideH").Op("-").Id("PadH").Op("+").Id("r").Op("*").Id("DilationH"),
					jen.If(id("h").Op("<").Lit(0).Op("||").Id("h").Op(">=").Id("H")).Block(jen.Continue()),
					jen.For(id("s").Op(":=").Lit(0), id("s").Op("<").Id("S"), id("s").Op("++")).Block(
						id("w").Op(":=").Id("pt").Dot("q").Op("*").Id("StrideW").Op("-").Id("PadW").Op("+").Id("s").Op("*").Id("DilationW"),
						jen.If(id("w").Op("<").Lit(0).Op("||").Id("w").Op(">=").Id("W")).Block(jen.Continue()),
						id("sum").Op("+=").Id("fromElem").Call(id("in").Index(id("inputAt").Call(id("pt").Dot("n"), id("ci"), id("h"), id("w")))).
							Op("*").Id("fromElem").Call(id("filter").Index(id("filterAt").Call(id("pt").Dot("k"), id("c"), id("r"), id("s")))),
					),
				),
			),
			jen.Return(id("sum")),
		))

	for _, fn := range indexFuncs(s.Problem.Layout) {
		params := make([]jen.Code, len(fn.params))
		for i, p := range fn.params {
			params[i] = id(p)
		}
		decl(f, fn.doc, jen.Func().Id(fn.name).Params(jen.List(params...).Int()).Int().Block(jen.Return(fn.expr)))
	}

	// Data helpers.
	decl(f, "random returns n elements drawn uniformly from [lo, hi).",
		jen.Func().Id("random").Params(id("rng").Op("*").Qual(randPath, "Rand"), id("n").Int(), jen.List(id("lo"), id("hi")).Float64()).Index().Id("elem").Block(
			id("xs").Op(":=").Make(jen.Index().Id("elem"), id("n")),
			jen.For(id("i").Op(":=").Range().Id("xs")).Block(
				id("xs").Index(id("i")).Op("=").Id("toElem").Call(id("lo").Op("+").Parens(id("hi").Op("-").Id("lo")).Op("*").Id("rng").Dot("Float64").Call()),
			),
			jen.Return(id("xs")),
		))
	decl(f, "alloc allocates device memory for n elements.",
		jen.Func().Id("alloc").Params(tT(), id("n").Int()).Add(cu("DevicePtr")).Block(
			id("t").Dot("Helper").Call(),
			jen.List(id("p"), jen.Err()).Op(":=").Add(cu("MemAlloc")).Call(jen.Int64().Call(id("n")).Op("*").Id("ElementBytes")),
			ifErr(fatalf("allocate %d elements: %v", id("n"), jen.Err())),
			jen.Return(id("p")),
		))
	decl(f, "free releases device memory from alloc.",
		jen.Func().Id("free").Params(tT(), id("p").Add(cu("DevicePtr"))).Block(
			id("t").Dot("Helper").Call(),
			jen.If(jen.Err().Op(":=").Add(cu("MemFree")).Call(id("p")), jen.Err().Op("!=").Nil()).Block(
				errorfT("free device memory: %v", jen.Err()),
			),
		))
	decl(f, "toDevice copies xs to the device memory at p.",
		jen.Func().Id("toDevice").Params(tT(), id("p").Add(cu("DevicePtr")), id("xs").Index().Id("elem")).Block(
			id("t").Dot("Helper").Call(),
			check(cu("MemcpyHtoD").Call(id("p"), jen.Qual(unsafePath, "Pointer").Call(jen.Op("&").Id("xs").Index(jen.Lit(0))), jen.Int64().Call(jen.Len(id("xs"))).Op("*").Id("ElementBytes")),
				"copy %d elements to the device", jen.Len(id("xs"))),
		))
	decl(f, "fromDevice copies the device memory at p into xs.",
		jen.Func().Id("fromDevice").Params(tT(), id("xs").Index().Id("elem"), id("p").Add(cu("DevicePtr"))).Block(
			id("t").Dot("Helper").Call(),
			check(cu("MemcpyDtoH").Call(jen.Qual(unsafePath, "Pointer").Call(jen.Op("&").Id("xs").Index(jen.Lit(0))), id("p"), jen.Int64().Call(jen.Len(id("xs"))).Op("*").Id("ElementBytes")),
				"copy %d elements from the device", jen.Len(id("xs"))),
		))
	return f
}
