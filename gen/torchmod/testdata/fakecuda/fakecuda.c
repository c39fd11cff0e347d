// A stand-in for libcuda.so.1 with the driver API functions the emitted
// __init__.py calls: it records what it was given, so that
// driver_check.py can check the module's ctypes calls without a GPU.
#include <stdint.h>
#include <string.h>

typedef int CUresult;

static uintptr_t current_ctx;               // cuCtxGetCurrent's answer
static char loaded[64];                     // the first bytes of the image
static unsigned int load_options;
static char function_name[128];
static int attribute, attribute_value;
static unsigned int grid[3], block[3], shared;
static uintptr_t stream;
static uint64_t params[8];
static int nparams = 4; // how many parameters the kernel takes (fake_set_nparams)
static int launches, retains;
static int fail_launches;                  // how many launches to fail next (fake_fail_launches)

// Each function name cuModuleGetFunction was asked for gets its own
// handle, 0x3000 + 0x10*i, so that the launch log tells the kernels apart.
#define MAX_FUNCTIONS 32
static char functions[MAX_FUNCTIONS][128];
static int nfunctions;

static int function_index(void *fn) {
    uintptr_t f = (uintptr_t)fn;
    if (f < 0x3000 || (f - 0x3000) % 0x10 != 0 || (int)((f - 0x3000) / 0x10) >= nfunctions) return -1;
    return (int)((f - 0x3000) / 0x10);
}

// The launch log: every successful launch since fake_log_reset, the last
// LOG_SIZE kept.
#define LOG_SIZE 64
static struct {
    int function;
    unsigned int grid[3], block[3], shared;
    uintptr_t stream;
    uint64_t params[8];
} launch_log[LOG_SIZE];
static int logged;

static int workspace;
static char order[256];
static uintptr_t order_stream[256];
static int norder;

static void note(char op, uintptr_t st) {
    if (norder < (int)sizeof order - 1) order_stream[norder] = st, order[norder++] = op;
}

CUresult cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = "fake error"; return 0; }
CUresult cuDeviceGet(int *dev, int ordinal) { *dev = ordinal; return 0; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { retains++; *ctx = (void *)(uintptr_t)(0x1000 + dev); return 0; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = (void *)current_ctx; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { current_ctx = (uintptr_t)ctx; return 0; }

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned int n, int *options, void **values) {
    memcpy(loaded, image, sizeof loaded - 1);
    load_options = n;
    if (n == 2 && options[0] == 5 && options[1] == 6 && (uintptr_t)values[1] > 0) {
        strcpy((char *)values[0], "");
    }
    if (memcmp(image, "FAIL", 4) == 0) {
        strcpy((char *)values[0], "ptxas fatal: fake failure");
        return 218;  // CUDA_ERROR_INVALID_PTX
    }
    *mod = (void *)0x2000;
    return 0;
}

// A kernel's prologue (a function named KERNEL_prologue): found only
// with fake_set_prologue(1), else CUDA_ERROR_NOT_FOUND; it leaves
// function_name (the kernel's) as it is.
static int prologue;

CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
    if (mod != (void *)0x2000) return 400;
    size_t n = strlen(name);
    int is_prologue = n > 9 && strcmp(name + n - 9, "_prologue") == 0;
    if (is_prologue && !prologue) return 500;
    if (!is_prologue) strncpy(function_name, name, sizeof function_name - 1);
    int i = 0;
    while (i < nfunctions && strcmp(functions[i], name) != 0) i++;
    if (i == nfunctions) {
        if (nfunctions == MAX_FUNCTIONS) return 1;
        strncpy(functions[nfunctions++], name, sizeof functions[0] - 1);
    }
    *fn = (void *)(uintptr_t)(0x3000 + 0x10 * i);
    return 0;
}

CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
    if (function_index(fn) < 0) return 400;
    attribute = attr;
    attribute_value = value;
    return 0;
}

CUresult cuLaunchKernel(void *fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int sh, void *st, void **kp, void **extra) {
    if (function_index(fn) < 0 || extra != 0) return 400;
    if (fail_launches > 0) {
        fail_launches--;
        return 719;  // CUDA_ERROR_LAUNCH_FAILED
    }
    grid[0] = gx, grid[1] = gy, grid[2] = gz;
    block[0] = bx, block[1] = by, block[2] = bz;
    shared = sh;
    stream = (uintptr_t)st;
    for (int i = 0; i < nparams; i++) params[i] = *(uint64_t *)kp[i];
    launches++;
    note('L', stream);
    int e = logged++ % LOG_SIZE;
    launch_log[e].function = function_index(fn);
    memcpy(launch_log[e].grid, grid, sizeof grid);
    memcpy(launch_log[e].block, block, sizeof block);
    launch_log[e].shared = sh;
    launch_log[e].stream = stream;
    memcpy(launch_log[e].params, params, sizeof params);
    return 0;
}

// cuLaunchKernelEx's configuration (cuda.h, CUDA 12.0 on).
typedef struct {
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    void *hStream;
    void *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;

static int launches_ex;

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, void *fn, void **kp, void **extra) {
    if (c->attrs != 0 || c->numAttrs != 0) return 1;
    CUresult r = cuLaunchKernel(fn, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                                c->blockDimZ, c->sharedMemBytes, c->hStream, kp, extra);
    if (r == 0) launches_ex++;
    return r;
}

// A module's globals: with fake_set_workspace(1), cuModuleGetGlobal finds
// any name ending in "_count" (a kernel with a workspace), else none
// (CUDA_ERROR_NOT_FOUND). Events: one handle; what was recorded and waited
// for is logged as (op, stream) pairs, 'R' for cuEventRecord and 'W' for
// cuStreamWaitEvent, interleaved with the launches ('L').

CUresult cuModuleGetGlobal_v2(uint64_t *dptr, size_t *bytes, void *mod, const char *name) {
    size_t n = strlen(name);
    if (mod != (void *)0x2000) return 400;
    if (!workspace || n < 6 || strcmp(name + n - 6, "_count") != 0) return 500;
    *dptr = 0x8000, *bytes = 4;
    return 0;
}

CUresult cuEventCreate(void **ev, unsigned int flags) { *ev = (void *)0x9000; return flags == 2 ? 0 : 1; }
CUresult cuEventRecord(void *ev, void *st) { if (ev != (void *)0x9000) return 400; note('R', (uintptr_t)st); return 0; }
CUresult cuStreamWaitEvent(void *st, void *ev, unsigned int flags) {
    if (ev != (void *)0x9000 || flags != 0) return 400;
    note('W', (uintptr_t)st);
    return 0;
}

void fake_set_workspace(int on) { workspace = on; norder = 0; order[0] = 0; }
void fake_set_prologue(int on) { prologue = on; norder = 0; order[0] = 0; }
const char *fake_order(void) { order[norder] = 0; return order; }
uintptr_t fake_order_stream(int i) { return order_stream[i]; }

// What the test reads back.
const char *fake_loaded(void) { return loaded; }
unsigned int fake_load_options(void) { return load_options; }
const char *fake_function(void) { return function_name; }
int fake_attribute(void) { return attribute; }
int fake_attribute_value(void) { return attribute_value; }
unsigned int fake_grid(int i) { return grid[i]; }
unsigned int fake_block(int i) { return block[i]; }
unsigned int fake_shared(void) { return shared; }
uintptr_t fake_stream(void) { return stream; }
uint64_t fake_param(int i) { return params[i]; }
void fake_set_nparams(int n) { nparams = n; }
int fake_launches(void) { return launches; }
int fake_launches_ex(void) { return launches_ex; }
int fake_retains(void) { return retains; }
uintptr_t fake_current(void) { return current_ctx; }
void fake_set_current(uintptr_t c) { current_ctx = c; }
void fake_fail_launches(int n) { fail_launches = n; }

// The launch log (cuLaunchKernel's, which cuLaunchKernelEx goes through):
// how many launches since fake_log_reset, and of launch i (0 the first,
// among the last 64) the function's name, geometry, stream and parameters.
int fake_log_count(void) { return logged; }
void fake_log_reset(void) { logged = 0; }
const char *fake_log_function(int i) { return functions[launch_log[i % LOG_SIZE].function]; }
unsigned int fake_log_grid(int i, int d) { return launch_log[i % LOG_SIZE].grid[d]; }
unsigned int fake_log_block(int i, int d) { return launch_log[i % LOG_SIZE].block[d]; }
unsigned int fake_log_shared(int i) { return launch_log[i % LOG_SIZE].shared; }
uintptr_t fake_log_stream(int i) { return launch_log[i % LOG_SIZE].stream; }
uint64_t fake_log_param(int i, int j) { return launch_log[i % LOG_SIZE].params[j]; }
