package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

func cu(name string) *jen.Statement     { return jen.Qual(cuPath, name) }
func unsafeP(x jen.Code) *jen.Statement { return jen.Qual(unsafePath, "Pointer").Call(x) }

// ifErr is `if err != nil { body }`.
func ifErr(body ...jen.Code) *jen.Statement {
	return jen.If(jen.Err().Op("!=").Nil()).Block(body...)
}

// forwardParams is the parameter list of Forward.
func forwardParams() jen.Code {
	return jen.Params(
		jen.Id("stream").Id("Stream"),
		jen.List(jen.Id("out"), jen.Id("in"), jen.Id("filter"), jen.Id("bias")).Id("DevicePtr"),
	)
}

// Doc comments shared by the cuda file and its tag-free twin.
const (
	kernelDoc = "Kernel is the loaded kernel, ready to launch in the context that was current\n" +
		"when Load ran. Forward may be called from several goroutines at once; Close\n" +
		"must not overlap it."
	closeDoc = "Close unloads the kernel's module; the context it was loaded in must be\n" +
		"current on the calling thread. Closing twice does nothing."
)

// loadDoc documents Load.
func loadDoc(s *spec) string {
	d := "Load loads the kernel into the CUDA context current on the calling OS\n" +
		"thread: call runtime.LockOSThread and make a context current first.\n"
	switch {
	case s.ptx == "":
		return d + "It needs a GPU of TunedArch: no PTX is embedded for other GPUs."
	case s.Fallback != nil:
		return d + "On a GPU of TunedArch it loads the embedded CUBIN; on any other of compute\n" +
			"capability ptxCC or more it loads the fallback kernel (LoadPTX)."
	}
	return d + "On a GPU of TunedArch it loads the embedded CUBIN, on any other of compute\n" +
		"capability ptxCC or more it has the driver compile the embedded PTX (LoadPTX)."
}

// loadPTXDoc documents LoadPTX.
func loadPTXDoc(s *spec) string {
	d := "LoadPTX loads the kernel of the embedded PTX, which the driver compiles for\n" +
		"the current GPU, whatever the GPU: Load does so on GPUs other than TunedArch's;\n" +
		"call it to run that kernel on a TunedArch GPU too (its test does).\n"
	switch {
	case s.ptx == "":
		return d + "This package embeds no PTX: LoadPTX returns an error."
	case s.Fallback != nil:
		return d + wrap(fmt.Sprintf("The PTX is a fallback kernel (for %s, %s), not the tuned one: %s.",
			s.Fallback.Arch, s.Fallback.Kernel, strings.TrimSuffix(s.Fallback.Summary, ".")))
	}
	return d + "The PTX is the tuned kernel's own."
}

// forwardDoc documents Forward.
func forwardDoc(s *spec) string {
	d := "Forward enqueues the convolution on stream (0: the legacy default stream) and\n" +
		"returns without waiting: out = conv(in, filter) + bias, all device addresses\n" +
		"of dense arrays in the layout's order (see the package documentation),\n" +
		"each Alignment-aligned (else an error, before anything is launched).\n"
	if !s.shape.Bias {
		d = "Forward enqueues the convolution on stream (0: the legacy default stream) and\n" +
			"returns without waiting: out = conv(in, filter), all device addresses of\n" +
			"dense arrays in the layout's order (see the package documentation), each\n" +
			"Alignment-aligned (else an error, before anything is launched). The\n" +
			"problem has no bias: bias is ignored (pass 0).\n"
	}
	return d + "The context that was current at Load must be current on the calling\n" +
		"thread. Concurrent calls are safe: each keeps its kernel arguments to itself."
}

// genKernelCUDA renders kernel_cuda.go: the embedded images, Load, Forward
// and Close over gorgonia.org/cu.
func genKernelCUDA(s *spec) *jen.File {
	f := s.newFile("cuda")
	f.Anon(embedPath)

	f.Comment(fmt.Sprintf("// cubin is the kernel compiled for TunedArch.\n//\n//go:embed %s", s.cubinName))
	f.Var().Id("cubin").String()
	f.Line()
	ptxDoc := "ptx is the kernel as PTX, which the driver compiles for other GPUs."
	if s.Fallback != nil {
		ptxDoc = "ptx is the fallback kernel as PTX, which the driver compiles for other GPUs."
	}
	f.Comment(fmt.Sprintf("// %s\n//\n//go:embed %s", ptxDoc, ptxFile))
	f.Var().Id("ptx").String()
	f.Line()
	decl(f, "cubinCC is TunedArch's compute capability as major*10 + minor.",
		jen.Const().Id("cubinCC").Op("=").Lit(s.cubinCC))
	switch fb := s.Fallback; {
	case s.ptx == "":
	case fb != nil:
		decl(f, "ptxCC is the least compute capability the PTX runs on.",
			jen.Const().Id("ptxCC").Op("=").Lit(s.ptxCC))
		decl(f, "The PTX's kernel: its name and launch geometry.", jen.Const().Defs(
			jen.Id("ptxKernelName").Op("=").Lit(fb.Kernel),
			jen.List(jen.Id("ptxGridX"), jen.Id("ptxGridY"), jen.Id("ptxGridZ")).Op("=").List(jen.Lit(fb.Grid[0]), jen.Lit(fb.Grid[1]), jen.Lit(fb.Grid[2])),
			jen.List(jen.Id("ptxBlockX"), jen.Id("ptxBlockY"), jen.Id("ptxBlockZ")).Op("=").List(jen.Lit(fb.Block[0]), jen.Lit(fb.Block[1]), jen.Lit(fb.Block[2])),
			jen.Id("ptxSharedBytes").Op("=").Lit(fb.SharedBytes),
		))
	default:
		decl(f, "ptxCC is the least compute capability the PTX runs on.",
			jen.Const().Id("ptxCC").Op("=").Lit(s.ptxCC))
		decl(f, "The PTX's kernel is the CUBIN's.", jen.Const().Defs(
			jen.Id("ptxKernelName").Op("=").Id("KernelName"),
			jen.List(jen.Id("ptxGridX"), jen.Id("ptxGridY"), jen.Id("ptxGridZ")).Op("=").List(jen.Id("GridX"), jen.Id("GridY"), jen.Id("GridZ")),
			jen.List(jen.Id("ptxBlockX"), jen.Id("ptxBlockY"), jen.Id("ptxBlockZ")).Op("=").List(jen.Id("BlockX"), jen.Id("BlockY"), jen.Id("BlockZ")),
			jen.Id("ptxSharedBytes").Op("=").Id("SharedBytes"),
		))
	}
	decl(f, "Stream and cu.Stream convert into each other through unsafe, which relies on\n"+
		"cu.Stream being one CUstream handle (gorgonia.org/cu v0.9.6). This line\n"+
		"fails to compile when the sizes differ.",
		jen.Var().Id("_").Index(jen.Lit(0)).Struct().Op("=").
			Index(jen.Qual(unsafePath, "Sizeof").Call(cu("Stream").Values()).Op("-").
				Qual(unsafePath, "Sizeof").Call(jen.Id("Stream").Call(jen.Lit(0)))).
			Struct().Values())

	decl(f, kernelDoc, jen.Type().Id("Kernel").Struct(
		jen.Id("mod").Add(cu("Module")),
		jen.Id("fn").Add(cu("Function")),
		jen.Id("launch").Id("launch"),
	))
	decl(f, "launch is a loaded kernel's launch geometry.", jen.Type().Id("launch").Struct(
		jen.List(jen.Id("grid"), jen.Id("block")).Index(jen.Lit(3)).Int(),
		jen.Id("sharedBytes").Int(),
	))

	// Load.
	loadBody := []jen.Code{
		jen.List(jen.Id("dev"), jen.Err()).Op(":=").Add(cu("CurrentDevice")).Call(),
		ifErr(jen.Return(jen.Nil(), s.errorf("load: no CUDA context current on this thread (lock the OS thread and make one current first): %w", jen.Err()))),
		jen.List(jen.Id("major"), jen.Err()).Op(":=").Id("dev").Dot("Attribute").Call(cu("ComputeCapabilityMajor")),
		ifErr(jen.Return(jen.Nil(), s.errorf("load: compute capability: %w", jen.Err()))),
		jen.List(jen.Id("minor"), jen.Err()).Op(":=").Id("dev").Dot("Attribute").Call(cu("ComputeCapabilityMinor")),
		ifErr(jen.Return(jen.Nil(), s.errorf("load: compute capability: %w", jen.Err()))),
		jen.Id("cc").Op(":=").Id("major").Op("*").Lit(10).Op("+").Id("minor"),
		jen.If(jen.Id("cc").Op("==").Id("cubinCC")).Block(
			jen.Return(jen.Id("load").Call(jen.Id("cubin"), jen.Id("TunedArch").Op("+").Lit(" CUBIN"), jen.Id("KernelName"), jen.Id("launch").Values(
				jen.Index(jen.Lit(3)).Int().Values(jen.Id("GridX"), jen.Id("GridY"), jen.Id("GridZ")),
				jen.Index(jen.Lit(3)).Int().Values(jen.Id("BlockX"), jen.Id("BlockY"), jen.Id("BlockZ")),
				jen.Id("SharedBytes"),
			))),
		),
	}
	if s.ptx == "" {
		loadBody = append(loadBody,
			jen.Return(jen.Nil(), s.errorf("load: the device is sm_%d%d, the CUBIN is for %s and no PTX is embedded", jen.Id("major"), jen.Id("minor"), jen.Id("TunedArch"))))
	} else {
		loadBody = append(loadBody,
			jen.If(jen.Id("cc").Op("<").Id("ptxCC")).Block(
				jen.Return(jen.Nil(), s.errorf("load: the device is sm_%d%d, the CUBIN is for %s and the embedded PTX needs compute capability %d.%d or more", jen.Id("major"), jen.Id("minor"), jen.Id("TunedArch"), jen.Id("ptxCC").Op("/").Lit(10), jen.Id("ptxCC").Op("%").Lit(10))),
			),
			jen.Return(jen.Id("LoadPTX").Call()))
	}
	decl(f, loadDoc(s), jen.Func().Id("Load").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(loadBody...))

	ptxBody := []jen.Code{jen.Return(jen.Nil(), s.errorf("load PTX: this package embeds none (its kernel is for %s only)", jen.Id("TunedArch")))}
	if s.ptx != "" {
		ptxBody = []jen.Code{jen.Return(jen.Id("load").Call(jen.Id("ptx"), jen.Lit("PTX"), jen.Id("ptxKernelName"), jen.Id("launch").Values(
			jen.Index(jen.Lit(3)).Int().Values(jen.Id("ptxGridX"), jen.Id("ptxGridY"), jen.Id("ptxGridZ")),
			jen.Index(jen.Lit(3)).Int().Values(jen.Id("ptxBlockX"), jen.Id("ptxBlockY"), jen.Id("ptxBlockZ")),
			jen.Id("ptxSharedBytes"),
		)))}
	}
	decl(f, loadPTXDoc(s), jen.Func().Id("LoadPTX").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(ptxBody...))

	imageBody := []jen.Code{
		jen.List(jen.Id("mod"), jen.Err()).Op(":=").Add(cu("LoadData")).Call(jen.Id("image")),
		ifErr(jen.Return(jen.Nil(), s.errorf("load %s: %w", jen.Id("what"), jen.Err()))),
		jen.List(jen.Id("fn"), jen.Err()).Op(":=").Id("mod").Dot("Function").Call(jen.Id("name")),
		ifErr(jen.Return(jen.Nil(), jen.Id("unload").Call(jen.Id("mod"),
			s.errorf("load %s: kernel function %s: %w", jen.Id("what"), jen.Id("name"), jen.Err())))),
	}
	if s.optIn {
		imageBody = append(imageBody,
			jen.Comment("More than 48 KiB of dynamic shared memory needs an opt-in."),
			jen.If(jen.Id("l").Dot("sharedBytes").Op(">").Lit(defaultSharedLimit)).Block(
				jen.If(jen.Err().Op(":=").Id("setMaxDynamicShared").Call(jen.Id("fn"), jen.Id("l").Dot("sharedBytes")), jen.Err().Op("!=").Nil()).Block(
					jen.Return(jen.Nil(), jen.Id("unload").Call(jen.Id("mod"), s.errorf("load %s: %w", jen.Id("what"), jen.Err()))),
				),
			))
	}
	imageBody = append(imageBody, jen.Return(jen.Op("&").Id("Kernel").Values(jen.Dict{
		jen.Id("mod"):    jen.Id("mod"),
		jen.Id("fn"):     jen.Id("fn"),
		jen.Id("launch"): jen.Id("l"),
	}), jen.Nil()))
	decl(f, "load loads image (what it is, for errors) and its kernel function name,\nlaunched with l.",
		jen.Func().Id("load").Params(jen.List(jen.Id("image"), jen.Id("what"), jen.Id("name")).String(), jen.Id("l").Id("launch")).
			Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(imageBody...))

	decl(f, "unload unloads mod after a failed Load; err says why Load failed.",
		jen.Func().Id("unload").Params(jen.Id("mod").Add(cu("Module")), jen.Err().Error()).Error().Block(
			jen.If(jen.Id("uerr").Op(":=").Id("mod").Dot("Unload").Call(), jen.Id("uerr").Op("!=").Nil()).Block(
				jen.Return(jen.Qual(errorsPath, "Join").Call(jen.Err(), s.errorf("unload after failed load: %w", jen.Id("uerr")))),
			),
			jen.Return(jen.Err()),
		))

	// Forward.
	biasArg := jen.Uint64().Call(jen.Id("bias"))
	argsDoc := "One 8-byte slot per kernel parameter (out, in, filter, bias), local to\n" +
		"this call: cu copies 8 bytes from each pointer, and concurrent calls\n" +
		"share nothing."
	if !s.shape.Bias {
		biasArg = jen.Lit(0)
		argsDoc += " The problem has no bias: its slot holds 0."
	}
	decl(f, forwardDoc(s), jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Forward").Add(forwardParams()).Error().Block(
		jen.If(jen.Id("k").Op("==").Nil().Op("||").Id("k").Dot("fn").Op("==").Parens(cu("Function").Values())).Block(
			jen.Return(s.errorf("forward: the kernel is not loaded (call Load) or was closed")),
		),
		jen.If(jen.Err().Op(":=").Id("checkPtrs").Call(jen.Id("out"), jen.Id("in"), jen.Id("filter"), jen.Id("bias")), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Err()),
		),
		doc(argsDoc),
		jen.Id("args").Op(":=").Index(jen.Lit(4)).Uint64().ValuesFunc(func(g *jen.Group) {
			g.Uint64().Call(jen.Id("out"))
			g.Uint64().Call(jen.Id("in"))
			g.Uint64().Call(jen.Id("filter"))
			g.Add(biasArg)
		}),
		jen.Id("params").Op(":=").Index().Qual(unsafePath, "Pointer").ValuesFunc(func(g *jen.Group) {
			for i := range 4 {
				g.Add(unsafeP(jen.Op("&").Id("args").Index(jen.Lit(i))))
			}
		}),
		jen.If(
			jen.Err().Op(":=").Id("k").Dot("fn").Dot("Launch").Call(
				jen.Id("k").Dot("launch").Dot("grid").Index(jen.Lit(0)), jen.Id("k").Dot("launch").Dot("grid").Index(jen.Lit(1)), jen.Id("k").Dot("launch").Dot("grid").Index(jen.Lit(2)),
				jen.Id("k").Dot("launch").Dot("block").Index(jen.Lit(0)), jen.Id("k").Dot("launch").Dot("block").Index(jen.Lit(1)), jen.Id("k").Dot("launch").Dot("block").Index(jen.Lit(2)),
				jen.Id("k").Dot("launch").Dot("sharedBytes"), jen.Id("cuStream").Call(jen.Id("stream")), jen.Id("params"),
			),
			jen.Err().Op("!=").Nil(),
		).Block(
			jen.Return(s.errorf("launch %s: %w", jen.Id("KernelName"), jen.Err())),
		),
		jen.Return(jen.Nil()),
	))

	// Close.
	decl(f, closeDoc, jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Close").Params().Error().Block(
		jen.If(jen.Id("k").Op("==").Nil().Op("||").Id("k").Dot("mod").Op("==").Parens(cu("Module").Values())).Block(
			jen.Return(jen.Nil()),
		),
		jen.Id("mod").Op(":=").Id("k").Dot("mod"),
		jen.List(jen.Id("k").Dot("mod"), jen.Id("k").Dot("fn")).Op("=").List(cu("Module").Values(), cu("Function").Values()),
		jen.If(jen.Err().Op(":=").Id("mod").Dot("Unload").Call(), jen.Err().Op("!=").Nil()).Block(
			jen.Return(s.errorf("close: unload module: %w", jen.Err())),
		),
		jen.Return(jen.Nil()),
	))

	decl(f, "StreamOf converts a gorgonia.org/cu stream to the Stream that Forward takes.",
		jen.Func().Id("StreamOf").Params(jen.Id("s").Add(cu("Stream"))).Id("Stream").Block(
			jen.Return(jen.Op("*").Parens(jen.Op("*").Id("Stream")).Parens(unsafeP(jen.Op("&").Id("s")))),
		))
	decl(f, "cuStream converts a Stream back to the gorgonia.org/cu stream it came from.",
		jen.Func().Id("cuStream").Params(jen.Id("s").Id("Stream")).Add(cu("Stream")).Block(
			jen.Return(jen.Op("*").Parens(jen.Op("*").Add(cu("Stream"))).Parens(unsafeP(jen.Op("&").Id("s")))),
		))
	decl(f, "PtrOf converts a gorgonia.org/cu device pointer to a DevicePtr.",
		jen.Func().Id("PtrOf").Params(jen.Id("p").Add(cu("DevicePtr"))).Id("DevicePtr").Block(
			jen.Return(jen.Id("DevicePtr").Call(jen.Id("p"))),
		))
	return f
}

// genFuncAttr renders funcattr_cuda.go: the cgo shim that lifts the
// function's dynamic shared memory limit, which gorgonia.org/cu v0.9.6
// cannot do.
func genFuncAttr(s *spec) *jen.File {
	f := s.newFile("cuda")
	f.CgoPreamble("#cgo LDFLAGS: -lcuda")
	f.CgoPreamble("#include <cuda.h>")
	c := func(name string) *jen.Statement { return jen.Qual(cgoPath, name) }

	decl(f, "setMaxDynamicShared reads the CUfunction out of a cu.Function through\n"+
		"unsafe, which relies on cu.Function being one CUfunction handle\n"+
		"(gorgonia.org/cu v0.9.6). This line fails to compile when the sizes differ.",
		jen.Var().Id("_").Index(jen.Lit(0)).Struct().Op("=").
			Index(jen.Qual(unsafePath, "Sizeof").Call(cu("Function").Values()).Op("-").
				Qual(unsafePath, "Sizeof").Call(c("CUfunction").Call(jen.Nil()))).
			Struct().Values())
	decl(f, "setMaxDynamicShared lets fn use up to bytes of dynamic shared memory per\n"+
		"block, beyond the default 48 KiB, by setting its attribute\n"+
		"CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. gorgonia.org/cu v0.9.6 has\n"+
		"no cuFuncSetAttribute.",
		jen.Func().Id("setMaxDynamicShared").Params(jen.Id("fn").Add(cu("Function")), jen.Id("bytes").Int()).Error().Block(
			jen.Id("handle").Op(":=").Op("*").Parens(jen.Op("*").Add(c("CUfunction"))).Parens(unsafeP(jen.Op("&").Id("fn"))),
			jen.Id("res").Op(":=").Add(c("cuFuncSetAttribute")).Call(jen.Id("handle"), c("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"), c("int").Call(jen.Id("bytes"))),
			jen.If(jen.Id("res").Op("!=").Add(c("CUDA_SUCCESS"))).Block(
				jen.Return(jen.Qual(fmtPath, "Errorf").Call(jen.Lit("allow %d bytes of dynamic shared memory: cuFuncSetAttribute: %s"), jen.Id("bytes"), jen.Id("resultName").Call(jen.Id("res")))),
			),
			jen.Return(jen.Nil()),
		))
	decl(f, "resultName names a CUresult, e.g. CUDA_ERROR_INVALID_VALUE.",
		jen.Func().Id("resultName").Params(jen.Id("res").Add(c("CUresult"))).String().Block(
			jen.Var().Id("name").Op("*").Add(c("char")),
			jen.If(c("cuGetErrorName").Call(jen.Id("res"), jen.Op("&").Id("name")).Op("!=").Add(c("CUDA_SUCCESS")).Op("||").Id("name").Op("==").Nil()).Block(
				jen.Return(jen.Qual(fmtPath, "Sprintf").Call(jen.Lit("CUresult %d"), jen.Int().Call(jen.Id("res")))),
			),
			jen.Return(c("GoString").Call(jen.Id("name"))),
		))
	return f
}

// genKernelStub renders kernel_nocuda.go: the same API without the cuda
// tag, so that the package builds anywhere and explains what is missing.
func genKernelStub(s *spec) *jen.File {
	f := s.newFile("!cuda")
	decl(f, kernelDoc+"\n\nThis build lacks the cuda build tag: no Kernel can be loaded.",
		jen.Type().Id("Kernel").Struct())
	decl(f, loadDoc(s)+"\n\nThis build lacks the cuda build tag: Load returns an error.",
		jen.Func().Id("Load").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
			jen.Return(jen.Nil(), jen.Id("errNoCUDA").Call()),
		))
	decl(f, loadPTXDoc(s)+"\n\nThis build lacks the cuda build tag: LoadPTX returns an error.",
		jen.Func().Id("LoadPTX").Params().Params(jen.Op("*").Id("Kernel"), jen.Error()).Block(
			jen.Return(jen.Nil(), jen.Id("errNoCUDA").Call()),
		))
	decl(f, forwardDoc(s)+"\n\nThis build lacks the cuda build tag: Forward returns an error.",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Forward").Add(forwardParams()).Error().Block(
			jen.Return(jen.Id("errNoCUDA").Call()),
		))
	decl(f, closeDoc+"\n\nThis build lacks the cuda build tag: Close returns an error.",
		jen.Func().Params(jen.Id("k").Op("*").Id("Kernel")).Id("Close").Params().Error().Block(
			jen.Return(jen.Id("errNoCUDA").Call()),
		))
	decl(f, "errNoCUDA says why nothing runs in this build.",
		jen.Func().Id("errNoCUDA").Params().Error().Block(
			jen.Return(jen.Qual(errorsPath, "New").Call(jen.Lit(s.Package+": built without the cuda build tag; rebuild with -tags cuda to run the kernel"))),
		))
	return f
}
