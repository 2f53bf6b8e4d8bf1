"""py_bench.py: CPU ns per cuMemAlloc_v2/cuMemFree_v2 pair called through ctypes from 20 nested Python functions, for `make bench` (tests/bench/run.sh).

Usage: py_bench.py STUB_DIR PAIRS [DEPTH]. Prints ns per pair and the pairs timed. Run
traced with GPUMEMTRACE_PYTHON=0 and =1: the difference is what the Python frames cost."""
import ctypes
import sys
import time

stub, pairs = sys.argv[1], int(sys.argv[2])
depth = int(sys.argv[3]) if len(sys.argv) > 3 else 20
cu = ctypes.CDLL(stub + "/libcuda.so.1")
ctx = ctypes.c_void_p()
if cu.cuInit(0) or cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) or cu.cuCtxSetCurrent(ctx):
    raise SystemExit("stub driver did not start")
alloc, free = cu.cuMemAlloc_v2, cu.cuMemFree_v2
alloc.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
free.argtypes = [ctypes.c_uint64]


def loop(n):
    p = ctypes.c_uint64()
    ref = ctypes.byref(p)
    for _ in range(n):
        if alloc(ref, 4096) or free(p.value):
            raise SystemExit("allocation failed")


def timed():
    loop(pairs // 10 + 1000)  # warm-up: stacks, code objects and lines interned
    t0 = time.process_time_ns()
    loop(pairs)
    return time.process_time_ns() - t0


# 20 frames: distinct functions f1 .. f17 (each its own code object, as in a program),
# then timed() and loop(): f1 calls f2 ... f17 calls timed
src = "".join("def f%d():\n    return f%d() + 0\n" % (k, k + 1) for k in range(1, depth - 3))
src += "def f%d():\n    return timed()\n" % (depth - 3)
ns = {"timed": timed}
exec(compile(src, "py_bench_nest.py", "exec"), ns)
# f1 .. f17, timed and loop are 19 frames; <module> one more
ns_time = ns["f1"]()
print("%.1f %d" % (ns_time / pairs, pairs))
