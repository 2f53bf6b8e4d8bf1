"""torch_bench.py: CPU and wall ns per PyTorch block event (c10::reportMemoryUsageToProfiler called through a PLT), reached from Python at a given depth, for tests/bench/torch_bench.sh.

Usage: torch_bench.py LIBTORCH_STUB EVENTS DEPTH MODE   (MODE: allocs | pairs)
Prints "CPU_NS_PER_EVENT WALL_NS_PER_EVENT". Untraced, the event is libc10's own function
(the fake's counter); traced, the library's definition records it and forwards."""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
events, depth, pairs = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4] == "pairs")
lib.torch_stub_reports.argtypes = [ctypes.c_long, ctypes.c_int]


def timed():
    lib.torch_stub_reports(events // 10 + 1000, pairs)  # warm-up: the stack interned
    c0, w0 = time.process_time_ns(), time.perf_counter_ns()
    lib.torch_stub_reports(events, pairs)
    return time.process_time_ns() - c0, time.perf_counter_ns() - w0


# DEPTH Python frames: distinct functions f1 .. f(DEPTH-1), then timed()
src = "".join("def f%d():\n    return f%d()\n" % (k, k + 1) for k in range(1, depth - 1))
src += "def f%d():\n    return timed()\n" % (depth - 1)
ns = {"timed": timed}
exec(compile(src, "torch_bench_nest.py", "exec"), ns)
cpu, wall = ns["f1"]()
print("%.1f %.1f" % (cpu / events, wall / events))
