"""torch_leak.py: the leak of a training loop under PyTorch's caching allocator, on the simulated libc10_cuda.so through ctypes, for tests/test_torch.c.

Each of STEPS NVTX ranges "train_step" runs a forward pass of temporaries (2..5 MiB,
freed: they make the 20 MiB segments) and keeps one 3 MiB block in keep_for_later,
as `kept.append(t.detach().clone().repeat(3, 1))` does in the real loop. With the cache
on, the kept blocks land in segments the forward pass made: device memory grows in
20 MiB steps every few steps, PyTorch's allocated bytes by 3 MiB every step.
Prints "keep_line=N" (the line that keeps the block) and the allocator's totals."""
import ctypes
import os
import sys

import nvtx

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
MIB = 1 << 20
c10 = ctypes.CDLL(os.environ["FAKES_DIR"] + "/libc10_cuda.so")
c10.fake_c10_cuda_malloc.restype = ctypes.c_void_p
c10.fake_c10_cuda_malloc.argtypes = [ctypes.c_size_t]
c10.fake_c10_cuda_free.argtypes = [ctypes.c_void_p]
for f in ("allocated", "reserved", "count_allocs", "count_frees"):
    getattr(c10, "fake_c10_cuda_" + f).restype = ctypes.c_uint64
# loaded by ctypes as libc10_cuda's dependency, RTLD_LOCAL: the library must still find it
prof = ctypes.CDLL(os.environ["FAKES_DIR"] + "/libc10.so")
prof.fake_c10_profiler_events.restype = ctypes.c_uint64
kept = []


def empty(n):
    p = c10.fake_c10_cuda_malloc(n)
    if not p:
        raise SystemExit("out of memory")
    return p


def keep_for_later(kept):
    kept.append(c10.fake_c10_cuda_malloc(3 * MIB))  # KEEP


def forward():
    t = [empty((2 + i) * MIB) for i in range(4)]
    for p in reversed(t):
        c10.fake_c10_cuda_free(p)


for step in range(STEPS):
    with nvtx.annotate("train_step"):
        forward()
        keep_for_later(kept)

with open(__file__) as f:
    line = next(i for i, s in enumerate(f, 1) if s.rstrip().endswith("# KEEP"))
print("keep_line=%d allocated=%d reserved=%d allocs=%d frees=%d profiler=%d" % (
    line, c10.fake_c10_cuda_allocated(), c10.fake_c10_cuda_reserved(),
    c10.fake_c10_cuda_count_allocs(), c10.fake_c10_cuda_count_frees(),
    prof.fake_c10_profiler_events()))
