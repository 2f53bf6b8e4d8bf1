#!/bin/sh
# check-lib-deps.sh: the preload library may need nothing but glibc at run time, and may
# export nothing but the hooked names (CUDA, NCCL, dl*, the exec family, getenv, NVTX's injection
# entry point, c10's two profiler reports) and the query API (gpumemtrace_*): fail the build otherwise.
set -eu
so="$1"
bad=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -E '^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$' || true)
if [ -n "$bad" ]; then echo "check-lib-deps: $so needs more than glibc: $bad" >&2; exit 1; fi
leaked=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -E '^(cu|cuda|nccl|pnccl|dl)[A-Za-z0-9_]*$|^(execve|execv|execvp|execvpe|execl|execlp|execle|fexecve|execveat|getenv)$|^InitializeInjectionNvtx2$|^gpumemtrace_[a-z_]*$|^_ZN3c1027report(MemoryUsage|OutOfMemory)ToProfiler[A-Za-z0-9_]*$|^$' || true)
if [ -n "$leaked" ]; then echo "check-lib-deps: $so exports names that are not hooks: $(echo $leaked | head -c 300)" >&2; exit 1; fi
