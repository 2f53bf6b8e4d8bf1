/* test_conformance.c: the hand-written CUDA ABI (cuda_abi.h, hooks.h) matches the toolkit's headers, and the library exports every hooked name. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"

#define TOOLKIT "/usr/local/cuda/include"

static const char *const hooked[] = {
#define GMT_X(file, lib, abi, ...) #abi,
    GMT_HOOKS(GMT_X)
#undef GMT_X
};
#define NHOOKED (sizeof hooked / sizeof hooked[0])

static bool have_toolkit(void)
{
    return access(TOOLKIT "/cuda.h", R_OK) == 0 && access(TOOLKIT "/cuda_runtime_api.h", R_OK) == 0;
}

static char tmpdir[64];

static void mk_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gmt-conform-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static int compile(const char *src, const char *defs, const char *out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cc -std=c11 -D_GNU_SOURCE %s -Werror -Werror=incompatible-pointer-types "
             "-Wno-deprecated-declarations -I" TOOLKIT " -I" HOOK_SRC "/libinterpose %s -o %s >%s.log 2>&1",
             defs, src, out, out);
    return system(cmd);
}

static void show_log(const char *out)
{
    char path[256], buf[2048] = "";
    snprintf(path, sizeof path, "%s.log", out);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    cr_log_error("%s", buf);
}

/* Each hooked prototype is compared with the toolkit's declaration of its ABI name, in
 * the mode where the toolkit declares that name without renaming it: per-thread
 * variants with CUDA_API_PER_THREAD_DEFAULT_STREAM, the v1 cuGetProcAddress and the
 * 5-argument cuGraphInstantiate(_v2) in the driver's internal mode, everything else
 * plainly. */
static const char *mode_of(const char *abi)
{
    size_t n = strlen(abi);
    if (n > 5 && !strcmp(abi + n - 5, "_ptsz"))
        return "-DCUDA_API_PER_THREAD_DEFAULT_STREAM";
    /* names cuda.h now maps to newer ABIs, declared as themselves only internally */
    if (!strcmp(abi, "cuGetProcAddress") || !strcmp(abi, "cuGraphInstantiate") ||
        !strcmp(abi, "cuGraphInstantiate_v2"))
        return "-D__CUDA_API_VERSION_INTERNAL";
    return "";
}

Test(conformance, hooked_prototypes_match_the_toolkit)
{
    if (!have_toolkit())
        cr_skip_test("no CUDA toolkit headers in " TOOLKIT ": prototypes not compared");
    mk_tmp();
    const char *modes[] = { "", "-DCUDA_API_PER_THREAD_DEFAULT_STREAM",
                            "-D__CUDA_API_VERSION_INTERNAL" };
    unsigned checked = 0;
    for (size_t m = 0; m < 3; m++) {
        char src[128], out[128];
        snprintf(src, sizeof src, "%s/protos%zu.c", tmpdir, m);
        snprintf(out, sizeof out, "%s/protos%zu.o", tmpdir, m);
        FILE *f = fopen(src, "w");
        cr_assert_not_null(f);
        fprintf(f, "#include <cuda.h>\n#include <cuda_runtime_api.h>\n"
                   "#define GMT_ABI_TOOLKIT_TYPES\n#include \"cuda_abi.h\"\n");
        for (size_t i = 0; i < NHOOKED; i++) {
            if (strcmp(mode_of(hooked[i]), modes[m]) != 0)
                continue;
            fprintf(f, "#ifdef %s\n#error %s is a macro here\n#endif\n", hooked[i], hooked[i]);
            fprintf(f, "_Static_assert(__builtin_types_compatible_p(__typeof__(%s), gmt_fn_%s), "
                       "\"%s differs from the toolkit\");\n",
                    hooked[i], hooked[i], hooked[i]);
            checked++;
        }
        fclose(f);
        char defs[128];
        snprintf(defs, sizeof defs, "-c %s", modes[m]);
        int rc = compile(src, defs, out);
        if (rc != 0)
            show_log(out);
        cr_expect_eq(rc, 0, "prototypes differ from the toolkit's (mode '%s')", modes[m]);
    }
    cr_expect_eq(checked, (unsigned)NHOOKED);
}

/* Layouts and values, printed by one program built twice: on our header and on the toolkit's. */
static const char layout_prog[] =
    "#include <stdio.h>\n#include <stddef.h>\n#include <stdint.h>\n"
    "#ifdef REAL\n#include <cuda.h>\n#include <cuda_runtime_api.h>\n#else\n#include \"cuda_abi.h\"\n#endif\n"
    "#define S(t) printf(#t \" %zu\\n\", sizeof(t));\n"
    "#define O(t, m) printf(#t \".\" #m \" %zu\\n\", offsetof(t, m));\n"
    "#define V(v) printf(#v \" %ld\\n\", (long)(v));\n"
    "int main(void) {\n"
    "S(CUmemAllocationProp) O(CUmemAllocationProp, location) O(CUmemAllocationProp, location.id)\n"
    "O(CUmemAllocationProp, win32HandleMetaData) O(CUmemAllocationProp, allocFlags)\n"
    "S(CUmemPoolProps) O(CUmemPoolProps, location) O(CUmemPoolProps, maxSize) O(CUmemPoolProps, usage)\n"
    "S(CUDA_MEM_ALLOC_NODE_PARAMS) O(CUDA_MEM_ALLOC_NODE_PARAMS, poolProps)\n"
    "O(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) O(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)\n"
    "S(CUmulticastObjectProp) O(CUmulticastObjectProp, size) S(CUmemAccessDesc) S(CUipcMemHandle)\n"
    "S(CUdeviceptr) S(CUmemGenericAllocationHandle) S(cuuint64_t) S(CUresult) S(cudaError_t)\n"
    "S(struct cudaMemPoolProps) O(struct cudaMemPoolProps, location) O(struct cudaMemPoolProps, maxSize)\n"
    "S(struct cudaPitchedPtr) O(struct cudaPitchedPtr, pitch) S(struct cudaExtent) O(struct cudaExtent, depth)\n"
    "V(CUDA_SUCCESS) V(CUDA_ERROR_OUT_OF_MEMORY) V(CUDA_ERROR_NOT_FOUND) V(CUDA_ERROR_NOT_SUPPORTED)\n"
    "V(cudaErrorMemoryAllocation) V(cudaErrorSymbolNotFound)\n"
    "V(CU_MEM_LOCATION_TYPE_DEVICE) V(CU_MEM_LOCATION_TYPE_HOST) V(CU_MEM_LOCATION_TYPE_HOST_NUMA)\n"
    "V(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) V(cudaMemLocationTypeDevice)\n"
    "V(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) V(CU_GET_PROC_ADDRESS_LEGACY_STREAM)\n"
    "V(CU_GET_PROC_ADDRESS_SUCCESS) V(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)\n"
    "V(cudaEnablePerThreadDefaultStream) V(cudaDriverEntryPointSuccess)\n"
    "V(CU_MEM_ALLOCATION_TYPE_PINNED) V(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)\n"
    "S(CUDA_ARRAY_DESCRIPTOR) O(CUDA_ARRAY_DESCRIPTOR, Format) O(CUDA_ARRAY_DESCRIPTOR, NumChannels)\n"
    "S(CUDA_ARRAY3D_DESCRIPTOR) O(CUDA_ARRAY3D_DESCRIPTOR, Depth) O(CUDA_ARRAY3D_DESCRIPTOR, Format)\n"
    "O(CUDA_ARRAY3D_DESCRIPTOR, Flags) S(CUarray) S(CUmipmappedArray) S(cudaArray_t)\n"
    "S(struct cudaChannelFormatDesc) O(struct cudaChannelFormatDesc, f)\n"
    "V(CU_AD_FORMAT_UNSIGNED_INT8) V(CU_AD_FORMAT_UNSIGNED_INT16) V(CU_AD_FORMAT_UNSIGNED_INT32)\n"
    "V(CU_AD_FORMAT_SIGNED_INT8) V(CU_AD_FORMAT_SIGNED_INT16) V(CU_AD_FORMAT_SIGNED_INT32)\n"
    "V(CU_AD_FORMAT_HALF) V(CU_AD_FORMAT_FLOAT) V(CU_AD_FORMAT_UNORM_INT_101010_2)\n"
    "V(CU_AD_FORMAT_UNORM_INT8X1) V(CU_AD_FORMAT_UNORM_INT8X2) V(CU_AD_FORMAT_UNORM_INT8X4)\n"
    "V(CU_AD_FORMAT_UNORM_INT16X1) V(CU_AD_FORMAT_UNORM_INT16X2) V(CU_AD_FORMAT_UNORM_INT16X4)\n"
    "V(CU_AD_FORMAT_SNORM_INT8X1) V(CU_AD_FORMAT_SNORM_INT8X2) V(CU_AD_FORMAT_SNORM_INT8X4)\n"
    "V(CU_AD_FORMAT_SNORM_INT16X1) V(CU_AD_FORMAT_SNORM_INT16X2) V(CU_AD_FORMAT_SNORM_INT16X4)\n"
    "V(CUDA_ARRAY3D_LAYERED) V(CUDA_ARRAY3D_CUBEMAP) V(CUDA_ARRAY3D_SPARSE)\n"
    "V(CUDA_ARRAY3D_DEFERRED_MAPPING) V(cudaArrayLayered) V(cudaArrayCubemap) V(cudaArraySparse)\n"
    "V(cudaArrayDeferredMapping) V(cudaChannelFormatKindFloat) V(cudaChannelFormatKindNone)\n"
    "V(cudaChannelFormatKindNV12) V(cudaChannelFormatKindUnsignedNormalized8X1)\n"
    "V(cudaChannelFormatKindSignedNormalized16X4) V(cudaChannelFormatKindUnsignedBlockCompressed1)\n"
    "V(cudaChannelFormatKindUnsignedBlockCompressed7SRGB) V(cudaChannelFormatKindUnsignedNormalized1010102)\n"
    "S(CUgraphEdgeData) S(CUDA_GRAPH_INSTANTIATE_PARAMS) O(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream)\n"
    "O(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out) V(CU_STREAM_CAPTURE_STATUS_ACTIVE)\n"
    "V(CU_STREAM_CAPTURE_MODE_RELAXED) V(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT)\n"
    "V(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) V(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)\n"
    "V((uintptr_t)CU_STREAM_PER_THREAD)\n"
    "return 0; }\n";

static void run_to(const char *prog, char *buf, size_t len)
{
    FILE *p = popen(prog, "r");
    cr_assert_not_null(p);
    size_t n = fread(buf, 1, len - 1, p);
    buf[n] = 0;
    cr_assert_eq(pclose(p), 0);
}

Test(conformance, struct_layouts_and_values_match_the_toolkit)
{
    if (!have_toolkit())
        cr_skip_test("no CUDA toolkit headers in " TOOLKIT ": layouts not compared");
    mk_tmp();
    char src[128], ours[128], real[128];
    snprintf(src, sizeof src, "%s/layout.c", tmpdir);
    snprintf(ours, sizeof ours, "%s/ours", tmpdir);
    snprintf(real, sizeof real, "%s/real", tmpdir);
    FILE *f = fopen(src, "w");
    cr_assert_not_null(f);
    fputs(layout_prog, f);
    fclose(f);
    int rc1 = compile(src, "", ours);
    if (rc1)
        show_log(ours);
    int rc2 = compile(src, "-DREAL -w", real);
    if (rc2)
        show_log(real);
    cr_assert_eq(rc1, 0);
    cr_assert_eq(rc2, 0);
    static char a[8192], b[8192];
    run_to(ours, a, sizeof a);
    run_to(real, b, sizeof b);
    cr_expect_gt(strlen(a), 100u);
    cr_expect_str_eq(a, b, "layouts differ:\nours:\n%s\ntoolkit:\n%s", a, b);
}

Test(conformance, library_exports_every_hooked_name)
{
    FILE *p = popen("nm -D --defined-only " HOOK_LIB, "r");
    cr_assert_not_null(p);
    static char syms[1 << 16];
    size_t n = fread(syms, 1, sizeof syms - 1, p);
    syms[n] = 0;
    cr_assert_eq(pclose(p), 0);
    const char *extra[] = { "dlsym", "dlvsym", "dlopen", "dlclose" };
    char want[128];
    for (size_t i = 0; i < NHOOKED + 4; i++) {
        const char *name = i < NHOOKED ? hooked[i] : extra[i - NHOOKED];
        snprintf(want, sizeof want, " T %s\n", name);
        cr_expect(strstr(syms, want) != NULL, "%s is not exported", name);
    }
}
