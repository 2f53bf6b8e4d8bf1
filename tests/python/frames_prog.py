"""frames_prog.py: allocates through the simulated CUDA runtime from Python code of known shape, for tests/python/check_frames.py.

Each scenario allocates its own number of bytes, so the checker finds its site by size.
The lines that allocate carry a marker comment `# SITE <name>`, which the checker looks up
in this file to know the exact line numbers."""
import asyncio
import ctypes
import os
import sys
import threading

rt = ctypes.CDLL(os.environ["FAKES_DIR"] + "/libcudart.so.13")
helper = ctypes.CDLL(os.environ["PYHELPER"])
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
REUSE, THREADS = 40, 6


def alloc(n):
    p = ctypes.c_void_p()
    err = rt.cudaMalloc(ctypes.byref(p), n)  # SITE alloc
    if err:
        raise SystemExit("cudaMalloc(%d) failed: %d" % (n, err))


def inner():
    alloc(1001)  # SITE inner


def middle():
    inner()  # SITE middle


def outer():
    middle()  # SITE outer


class Model:
    def forward(self):
        alloc(1002)  # SITE forward


def gen():
    yield 1
    alloc(1003)  # SITE gen
    yield 2


async def leaf_coro():
    await asyncio.sleep(0)
    alloc(1004)  # SITE coro


async def main_coro():
    await leaf_coro()  # SITE main_coro


def recurse(k):
    if k == 0:
        alloc(1005)  # SITE recurse
        return
    recurse(k - 1)  # SITE recurse_call


def far():
    n = 1008
    # a gap of 70 lines with no code: the next location entry's line delta, 71, is a
    # two-byte varint whose first byte's continuation bit is no bit of the value
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    #
    alloc(n)  # SITE far


def alloc_over_lines(n):
    # calls spread over lines: each CALL is the first unit of its own location entry
    # (3.11+), after the entries of its arguments on the lines below
    p = ctypes.c_void_p()
    err = rt.cudaMalloc(  # SITE lines_c
        ctypes.byref(p),
        n)
    if err:
        raise SystemExit("cudaMalloc(%d) failed: %d" % (n, err))


def call_over_lines(n):
    alloc_over_lines(  # SITE lines_py
        n
        + 0)


def in_thread():
    alloc(1006)  # SITE thread


def reuse(n):
    # code objects made and freed in turn: a new one (and its strings) can take the
    # freed one's addresses; each must still be named as itself
    for i in range(n):
        code = compile("\nalloc(%d)\n" % (2000 + i), "gen_%d.py" % i, "exec")
        exec(code, {"alloc": alloc})
        del code


def worker(k):
    for _ in range(10):
        alloc(3000 + k)  # SITE worker


def many_threads(n):
    # captures at the same time: ctypes drops the GIL around each call
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def native_thread():
    # a thread that C made, with no Python state: cudaMalloc(1007) from pthread_create
    if helper.alloc_on_native_thread(ctypes.c_size_t(1007)) != 0:
        raise SystemExit("native thread allocation failed")


def forked():
    alloc(1010)  # SITE forked


def fork_child():
    # the thread has read these frames before it forks; the child, whose code ids start
    # again, must define the ones its stack uses, not reuse the parent's
    forked()
    pid = os.fork()
    if pid == 0:
        forked()
        sys.exit(0)  # an exit that ends the trace (os._exit loses the last flush period)
    _, status = os.waitpid(pid, 0)
    if status:
        raise SystemExit("the fork child failed: %d" % status)


def run_all():
    outer()
    Model().forward()
    g = gen()
    for _ in g:
        pass
    asyncio.run(main_coro())
    recurse(500)
    far()
    call_over_lines(1009)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    native_thread()
    reuse(REUSE)
    many_threads(THREADS)
    # the same call site again, many times: the line cache and the stack interning
    for _ in range(200):
        inner()
    fork_child()


if __name__ == "__main__":
    sys.setrecursionlimit(5000)
    run_all()
