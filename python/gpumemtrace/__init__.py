"""gpumemtrace: where a training job's GPU memory went, and which NCCL call took it.

The package ships the ``gpumemtrace`` CLI and the preload library ``libgpumemtrace.so``.
Inside a traced process (one started by ``gpumemtrace run``, or with the library in
``LD_PRELOAD``) it also reads the process's own figures and marks phases:

    import gpumemtrace
    with gpumemtrace.phase("load"):        # an NVTX range: a phase in `gpumemtrace summary`
        model = load()
    gpumemtrace.peak_bytes()                # tracked device bytes at their peak, largest device
    gpumemtrace.reset_peak()

Outside a traced process these do nothing and read 0 (``traced()`` says which).
"""
import ctypes
import functools
import os
import sys

__all__ = ["library_path", "cli_path", "traced", "loaded_library", "phase", "current_bytes",
           "peak_bytes", "reset_peak", "devices", "exact", "trace_file", "main",
           "ALL_DEVICES", "UNKNOWN_DEVICE", "ALL", "NCCL", "OTHER"]
__version__ = "0.1.0"

# gpumemtrace.h's constants
ALL_DEVICES = -1
UNKNOWN_DEVICE = -2
ALL, NCCL, OTHER = 0, 1, 2
_CATEGORIES = {"all": ALL, "nccl": NCCL, "other": OTHER}

_LIB_NAME = "libgpumemtrace.so"
_here = os.path.dirname(os.path.abspath(__file__))


def _shipped(name):
    """A file the wheel ships beside the package's code, else the one a checkout built."""
    for d in (os.path.join(_here, "_bin"),
              os.path.join(os.path.dirname(os.path.dirname(_here)), "build")):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def library_path():
    """The preload library to use: $GPUMEMTRACE_LIB, else the one shipped with the package.
    None when there is none."""
    env = os.environ.get("GPUMEMTRACE_LIB")
    if env:
        return env
    return _shipped(_LIB_NAME)


def cli_path():
    """The gpumemtrace CLI: the one beside the library this process runs under (or
    $GPUMEMTRACE_LIB names), else the one shipped with the package."""
    for lib in (loaded_library(), os.environ.get("GPUMEMTRACE_LIB")):
        if lib:
            p = os.path.join(os.path.dirname(lib), "gpumemtrace")
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return _shipped("gpumemtrace")


def loaded_library():
    """The path of the libgpumemtrace.so loaded in this process, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                if path.endswith("/" + _LIB_NAME) or path.endswith("/" + _LIB_NAME + " (deleted)"):
                    return path
    except OSError:
        pass
    return None


_handle = None
_handle_known = False


def _lib():
    """The loaded library's handle, found once: never a second copy loaded."""
    global _handle, _handle_known
    if _handle_known:
        return _handle
    h = None
    try:
        g = ctypes.CDLL(None)
        if hasattr(g, "gpumemtrace_query_version"):
            h = g
    except OSError:
        pass
    if h is None:
        path = loaded_library()
        if path:
            try:  # RTLD_NOLOAD: the copy already there, or nothing
                h = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
            except OSError:
                h = None
    if h is not None:
        try:
            if h.gpumemtrace_query_version() < 1:
                h = None
        except AttributeError:  # a library older than the query API
            h = None
    if h is not None:
        for name in ("gpumemtrace_current_bytes", "gpumemtrace_peak_bytes"):
            fn = getattr(h, name)
            fn.restype = ctypes.c_int64
            fn.argtypes = [ctypes.c_int, ctypes.c_int]
        h.gpumemtrace_devices.restype = ctypes.c_uint64
        h.gpumemtrace_exact.restype = ctypes.c_int
        h.gpumemtrace_reset_peak.restype = None
    _handle, _handle_known = h, True
    return h


def traced():
    """True when this process runs under the library (its figures can be read)."""
    return _lib() is not None


def _category(category):
    if isinstance(category, str):
        try:
            return _CATEGORIES[category]
        except KeyError:
            raise ValueError("category: one of all, nccl, other, not %r" % category) from None
    return int(category)


def current_bytes(device=ALL_DEVICES, category=ALL):
    """Tracked device bytes held now: on one device, or summed over all (ALL_DEVICES);
    category "all", "nccl" (allocated inside an NCCL call or for one) or "other"."""
    h = _lib()
    return h.gpumemtrace_current_bytes(int(device), _category(category)) if h else 0


def peak_bytes(device=ALL_DEVICES, category=ALL):
    """Tracked device bytes at their peak since the start or the last reset_peak(): on
    one device, or the largest device's (ALL_DEVICES)."""
    h = _lib()
    return h.gpumemtrace_peak_bytes(int(device), _category(category)) if h else 0


def reset_peak():
    """Every peak becomes what is held now: the peak of what follows."""
    h = _lib()
    if h:
        h.gpumemtrace_reset_peak()


def devices():
    """The devices that have had tracked memory (UNKNOWN_DEVICE among them when some
    memory was allocated where no device was known)."""
    h = _lib()
    if not h:
        return []
    mask = h.gpumemtrace_devices()
    out = [d for d in range(63) if mask >> d & 1]
    if mask >> 63 & 1:
        out += [63, UNKNOWN_DEVICE]
    return out


def exact():
    """True while the figures count every allocation the trace records."""
    h = _lib()
    return bool(h and h.gpumemtrace_exact())


def trace_file():
    """The trace this process writes (a *.gmt it holds open), or None."""
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                p = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
            if p.endswith(".gmt"):
                return p
    except OSError:
        pass
    return None


class phase:
    """An NVTX range around a block or a function: a phase in `gpumemtrace summary`.

        with gpumemtrace.phase("load"): ...
        @gpumemtrace.phase("train_step")
        def step(batch): ...

    Recorded through the library's own NVTX injection when the process is traced (no
    NVTX package needed); nothing happens otherwise."""

    def __init__(self, name):
        self.name = str(name)

    def __enter__(self):
        from . import _nvtx
        _nvtx.push(self.name)
        return self

    def __exit__(self, *exc):
        from . import _nvtx
        _nvtx.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with phase(self.name):
                return fn(*args, **kwargs)
        return wrapped


def main(argv=None):
    """The `gpumemtrace` command: runs the shipped CLI in this process's place."""
    cli = cli_path()
    if not cli:
        sys.stderr.write("gpumemtrace: the CLI is not part of this installation "
                         "(build it with make, or install the wheel)\n")
        return 2
    args = sys.argv[1:] if argv is None else list(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cli, [cli] + args)
