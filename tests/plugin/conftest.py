"""conftest.py: what the plugin's own tests run against: the simulated CUDA and NCCL (tests/fakes, $GMT_FAKES or the checkout's build/fakes) and the preload library ($GMT_LIB, as tests/golden/pytest-plugin.sh gives it, else the installed package's)."""
import importlib.metadata
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKES = os.path.abspath(os.environ.get("GMT_FAKES", os.path.join(ROOT, "build", "fakes")))
if os.environ.get("GMT_LIB"):
    os.environ["GPUMEMTRACE_LIB"] = os.path.abspath(os.environ["GMT_LIB"])

pytest_plugins = ["pytester"]


def plugin_installed():
    """True when the plugin comes from an installed package's pytest11 entry point."""
    try:
        eps = importlib.metadata.entry_points(group="pytest11")
    except TypeError:  # Python before 3.10
        eps = importlib.metadata.entry_points().get("pytest11", [])
    return any(ep.name == "gpumemtrace" for ep in eps)


@pytest.fixture
def gmt(pytester, monkeypatch):
    """A pytester whose inner sessions can reach the simulated CUDA/NCCL and the plugin."""
    for v in ("LD_PRELOAD", "NVTX_INJECTION64_PATH", "GPUMEMTRACE_OUTPUT",
              "PYTEST_GPUMEMTRACE_REEXEC", "PYTEST_GPUMEMTRACE_CHILD"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("GMT_FAKES", FAKES)
    # pytester moves HOME, and with it a pytest installed in the user's site: the inner
    # sessions find pytest, and what it needs, by the path it was imported from
    site = os.path.dirname(os.path.dirname(pytest.__file__))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (site, os.environ.get("PYTHONPATH")) if p))
    pytester.makeconftest(HELPERS)
    pytester.extra = [] if plugin_installed() else ["-p", "gpumemtrace.pytest_plugin"]
    return pytester


# What the inner tests use: device memory and NCCL calls on the simulated GPU, by ctypes.
HELPERS = r'''
import ctypes, os
import pytest

FAKES = os.environ["GMT_FAKES"]

class UniqueId(ctypes.Structure):
    _fields_ = [("b", ctypes.c_char * 128)]

@pytest.fixture
def cuda():
    rt = ctypes.CDLL(os.path.join(FAKES, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
    rt.cudaSetDevice(0)
    held = []
    class Cuda:
        def malloc(self, n):
            p = ctypes.c_void_p()
            assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
            held.append(p)
            return p
        def free(self, p):
            assert rt.cudaFree(p) == 0
            held.remove(p)
    yield Cuda()
    for p in held:
        rt.cudaFree(p)

@pytest.fixture
def nccl(cuda):
    lib = ctypes.CDLL(os.path.join(FAKES, "libnccl.so.2"))
    lib.ncclCommInitRank.argtypes = [ctypes.c_void_p, ctypes.c_int, UniqueId, ctypes.c_int]
    uid = UniqueId()
    assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
    comm = ctypes.c_void_p()
    assert lib.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
    class Nccl:
        def all_reduce(self, buf, count):  # float sum, in place
            assert lib.ncclAllReduce(buf, buf, ctypes.c_size_t(count), 7, 0, comm, None) == 0
    yield Nccl()
    lib.ncclCommDestroy(comm)
'''
