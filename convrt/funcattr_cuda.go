//go:build cuda

package convrt

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// #cgo LDFLAGS: -lcuda
// #include <cuda.h>
import "C"

// setMaxDynamicShared reads the CUfunction out of a cu.Function through
// unsafe, which relies on cu.Function being one CUfunction handle
// (gorgonia.org/cu v0.9.6). This line fails to compile when the sizes differ.
var _ [0]struct{} = [unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(C.CUfunction(nil))]struct{}{}

// setMaxDynamicShared lets fn use up to bytes of dynamic shared memory per
// block, beyond the default 48 KiB, by setting its attribute
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. gorgonia.org/cu v0.9.6 has
// no cuFuncSetAttribute.
func setMaxDynamicShared(fn cu.Function, bytes int) error {
	handle := *(*C.CUfunction)(unsafe.Pointer(&fn))
	res := C.cuFuncSetAttribute(handle, C.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, C.int(bytes))
	if res != C.CUDA_SUCCESS {
		return fmt.Errorf("allow %d bytes of dynamic shared memory: cuFuncSetAttribute: %s", bytes, resultName(res))
	}
	return nil
}

// resultName names a CUresult, e.g. CUDA_ERROR_INVALID_VALUE.
func resultName(res C.CUresult) string {
	var name *C.char
	if C.cuGetErrorName(res, &name) != C.CUDA_SUCCESS || name == nil {
		return fmt.Sprintf("CUresult %d", int(res))
	}
	return C.GoString(name)
}
