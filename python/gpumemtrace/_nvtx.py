"""NVTX ranges for gpumemtrace.phase, through the library's own NVTX injection.

The library receives NVTX ranges the way every NVTX client hands them over: a client
looks up InitializeInjectionNvtx2 in the injection library and calls it with its
export-table getter; the library then writes its functions into the client's slots
(module 1, CORE: index 9 nvtxRangePushA, 11 nvtxRangePop). This module is such a
client, in ctypes, talking to the library already loaded in the process. Nothing is
recorded when the process is not traced, or when the library declines (GPUMEMTRACE_NVTX=0).
"""
import ctypes
import threading

_MODULE_CORE = 1
_SLOTS = 16                  # CORE's table: index 0 unused, 1..11 the ranges and marks
_PUSH_A, _POP = 9, 11
_ETID_CALLBACKS = 1

_GetTable = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p))),
                             ctypes.POINTER(ctypes.c_uint))
_GetExport = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint32)


class _Callbacks(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("get_module_table", _GetTable)]


_lock = threading.Lock()
_state = None                # None: not tried; False: nothing to call; else (push, pop)
_keep = []                   # what the library points into: alive as long as the process


def _init():
    global _state
    from . import _lib
    h = _lib()
    entry = getattr(h, "InitializeInjectionNvtx2", None) if h is not None else None
    if entry is None:
        _state = False
        return
    slots = (ctypes.c_void_p * _SLOTS)()
    table = (ctypes.POINTER(ctypes.c_void_p) * _SLOTS)()
    for i in range(1, _SLOTS):
        table[i] = ctypes.pointer(ctypes.c_void_p.from_buffer(slots, i * ctypes.sizeof(ctypes.c_void_p)))

    def get_table(module, out, out_size):
        if module != _MODULE_CORE:
            return 0
        out[0] = ctypes.cast(table, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)))
        out_size[0] = _SLOTS
        return 1

    cb_table = _GetTable(get_table)
    callbacks = _Callbacks(ctypes.sizeof(_Callbacks), cb_table)

    def get_export(etid):
        return ctypes.addressof(callbacks) if etid == _ETID_CALLBACKS else None

    cb_export = _GetExport(get_export)
    _keep.extend([slots, table, cb_table, callbacks, cb_export])
    entry.restype = ctypes.c_int
    entry.argtypes = [_GetExport]
    if not entry(cb_export) or not slots[_PUSH_A] or not slots[_POP]:
        _state = False
        return
    push = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)(slots[_PUSH_A])
    pop = ctypes.CFUNCTYPE(ctypes.c_int)(slots[_POP])
    _state = (push, pop)


def _fns():
    if _state is None:
        with _lock:
            if _state is None:
                _init()
    return _state


def push(name):
    f = _fns()
    if f:
        f[0](name.encode("utf-8", "replace"))


def pop():
    f = _fns()
    if f:
        f[1]()
