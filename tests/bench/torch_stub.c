/* torch_stub.c: libtorch_stub.so for the block-event benchmark: calls c10::reportMemoryUsageToProfiler through its PLT as libc10_cuda.so does, and nothing else. */
#include <stddef.h>
#include <stdint.h>

struct c10_device {
    int8_t type;
    int8_t index;
};
void c10_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                struct c10_device device) __asm__("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");

/* n events of device 0: pairs of +4096 and -4096 at one address (pairs != 0), or n
 * blocks handed out at n addresses (pairs == 0, the events that capture a stack). */
__attribute__((visibility("default"))) void torch_stub_reports(long n, int pairs)
{
    uintptr_t base = (uintptr_t)1 << 40;
    size_t allocated = 0;
    for (long i = 0; i < n; i++) {
        void *p = (void *)(base + (pairs ? 0 : (uintptr_t)i * 4096));
        if (pairs && (i & 1)) {
            allocated -= 4096;
            c10_report(p, -4096, allocated, 1u << 30, (struct c10_device){1, 0});
        } else {
            allocated += 4096;
            c10_report(p, 4096, allocated, 1u << 30, (struct c10_device){1, 0});
        }
    }
}
