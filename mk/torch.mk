# mk/torch.mk: the simulated libc10.so and libc10_cuda.so (tests/fakes/fake_c10*.c), the program that drives them, and tests/test_torch's prerequisites.
#
# Products, in $(FAKES_DIR):
#   libc10.so        fake_c10.c: c10's profiler report functions, counting what reaches them
#   libc10_cuda.so   fake_c10_cuda.c: the caching allocator, importing them from libc10.so
#   progs/fake_torch tests/progs/fake_torch.c: scenarios in C (see its top)

FAKE_C10      := $(FAKES_DIR)/libc10.so
FAKE_C10_CUDA := $(FAKES_DIR)/libc10_cuda.so
FAKE_TORCH_PROG := $(FAKES_DIR)/progs/fake_torch

$(FAKE_C10): tests/fakes/fake_c10.c tests/fakes/fake_c10.h
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libc10.so -o $@ $<

# Linked against libc10.so and libcudart.so.13 by name, as the real one is: the report
# functions are imported (PLT), never bound inside. No debug information, as in PyPI's
# wheels: its frames are named by its symbols (c10::cuda::CUDACachingAllocator::...).
$(FAKE_C10_CUDA): tests/fakes/fake_c10_cuda.c tests/fakes/fake_c10.h $(FAKE_HDRS) $(FAKE_C10) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -g0 $(FAKE_SOFLAGS) -Wl,-soname,libc10_cuda.so -o $@ $< \
	  -L$(FAKES_ABS) -lc10 -lcudart

$(FAKE_TORCH_PROG): tests/progs/fake_torch.c tests/fakes/fake_c10.h $(FAKE_C10_CUDA)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lc10_cuda -lc10 -lcudart

.PHONY: fakes-torch
fakes-torch: $(FAKE_C10) $(FAKE_C10_CUDA) $(FAKE_TORCH_PROG)
test-extras: fakes-torch
$(BUILD)/tests/test_torch: fakes-torch
$(BUILD)/tests/test_torch: private ALLCFLAGS += -DTORCH_SRC='"$(abspath .)"'

# ---- the block-event benchmark (tests/bench/torch_bench.sh): `make bench-torch`
$(BUILD)/bench/libtorch_stub.so: tests/bench/torch_stub.c $(FAKE_C10)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -o $@ $< -L$(FAKES_ABS) -Wl,-rpath,$(FAKES_ABS) -lc10

.PHONY: bench-torch
bench-torch: lib $(BUILD)/bench/libtorch_stub.so
	tests/bench/torch_bench.sh $(BUILD)
