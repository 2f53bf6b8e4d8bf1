# mk/fakes.mk: the simulated CUDA driver, runtime and NCCL (tests/fakes) and the test programs built on them.
#
# Products, in $(FAKES_DIR) = $(BUILD)/fakes:
#   libcuda.so.1 (+ libcuda.so)        fake driver          tests/fakes/fake_driver.c
#   libcudart.so.13 (+ libcudart.so)   fake runtime, shared tests/fakes/fake_runtime.c
#   libcudart_static.a                 fake runtime, static (same source)
#   libnccl.so.2 (+ libnccl.so)        fake NCCL, with the static runtime inside
#   nccl-memstats/libnccl.so.2         the same as NCCL 2.29.7, with ncclCommMemStats
#   old-driver/libcuda.so.1            fake driver without cuGetProcAddress_v2 (pre-12.0)
#   no-capture-info/libcuda.so.1       fake driver without cuStreamGetCaptureInfo_v3
# Test programs, in $(FAKES_DIR)/progs (plain flags, never sanitized, so that others can
# LD_PRELOAD the tracer into them); each says what it does at the top of its source:
#   fake_cudart          tests/progs/fake_cudart.c, shared runtime (cudaMalloc & co)
#   fake_cudart_static   the same source linked with libcudart_static.a (like nvcc's default)
#   fake_driver_vmm      tests/progs/fake_driver_vmm.c: driver API only, cuMem VMM + pools
#   fake_nccl_2proc      tests/progs/fake_nccl_2proc.c: launcher + 2 ranks in 2 processes
#   fake_nccl_1proc      tests/progs/fake_nccl_1proc.c: ncclCommInitAll, 2 devices, 1 process
#   untracked_prog       tests/progs/untracked_prog.c: one GPU: context, NCCL, limits moved
#   fake_abi_check_fake / fake_abi_check_real   ABI values, fake header vs the toolkit's
# Make variables for other mk files:
#   FAKES_DIR, FAKE_LIBS (all the libraries), FAKE_PROGS (all the programs),
#   FAKE_PROG_<name> (one program), FAKE_CFLAGS/FAKE_LDFLAGS (to build a program of your own
#   against the fakes: $(CC) $(FAKE_CFLAGS) x.c -o x $(FAKE_LDFLAGS) -lcudart -lnccl).
# Targets: fakes (libraries + programs); all of it hangs on test-extras.

FAKES_DIR    := $(BUILD)/fakes
FAKES_ABS     = $(abspath $(FAKES_DIR))
FAKE_OBJDIR  := $(BUILD)/obj-fakes
# Never sanitized, whatever SAN says: the tracer gets preloaded into these.
FAKE_CFLAGS   = $(CSTD) $(WARN) $(OPT) -Itests/fakes -pthread
FAKE_LDFLAGS  = -L$(FAKES_ABS) -Wl,-rpath,$(FAKES_ABS) -pthread -ldl
FAKE_SOFLAGS := -shared -fPIC -fvisibility=hidden -Wl,-Bsymbolic-functions -Wl,-z,defs \
                -Wl,-rpath,'$$ORIGIN' -pthread

FAKE_DRIVER   := $(FAKES_DIR)/libcuda.so.1
FAKE_RUNTIME  := $(FAKES_DIR)/libcudart.so.13
FAKE_RT_STATIC := $(FAKES_DIR)/libcudart_static.a
FAKE_NCCL     := $(FAKES_DIR)/libnccl.so.2
FAKE_NCCL_MEMSTATS := $(FAKES_DIR)/nccl-memstats/libnccl.so.2
FAKE_LINKS    := $(FAKES_DIR)/libcuda.so $(FAKES_DIR)/libcudart.so $(FAKES_DIR)/libnccl.so
FAKE_RT_LIBS  := $(FAKE_DRIVER) $(FAKE_RUNTIME) $(FAKE_RT_STATIC) $(FAKES_DIR)/libcuda.so $(FAKES_DIR)/libcudart.so
FAKE_OLD_DRIVER := $(FAKES_DIR)/old-driver/libcuda.so.1
FAKE_NOINFO_DRIVER := $(FAKES_DIR)/no-capture-info/libcuda.so.1
FAKE_LIBS     := $(FAKE_RT_LIBS) $(FAKE_NCCL) $(FAKES_DIR)/libnccl.so $(FAKE_NCCL_MEMSTATS) $(FAKE_OLD_DRIVER) \
                 $(FAKE_NOINFO_DRIVER)

FAKE_PROG_NAMES := fake_cudart fake_cudart_static fake_driver_vmm fake_nccl_2proc fake_nccl_1proc fake_abi_check_fake \
                   untracked_prog
FAKE_HAVE_TOOLKIT := $(wildcard /usr/local/cuda/include/cuda.h)
FAKE_PROG_NAMES += $(if $(FAKE_HAVE_TOOLKIT),fake_abi_check_real)
FAKE_PROGS    := $(FAKE_PROG_NAMES:%=$(FAKES_DIR)/progs/%)
$(foreach p,$(FAKE_PROG_NAMES),$(eval FAKE_PROG_$(p) := $(FAKES_DIR)/progs/$(p)))

.PHONY: fakes
fakes: $(FAKE_LIBS) $(FAKE_PROGS)
test-extras: fakes

FAKE_HDRS := $(wildcard tests/fakes/*.h)

$(FAKE_DRIVER): tests/fakes/fake_driver.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libcuda.so.1 -o $@ $<

# A driver from before CUDA 12.0 (no cuGetProcAddress_v2 export): put its directory in
# LD_LIBRARY_PATH to see the runtime fall back to dlsym by ABI name.
$(FAKE_OLD_DRIVER): tests/fakes/fake_driver.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -DFAKECUDA_NO_PROC_ADDRESS_V2 -Wl,-soname,libcuda.so.1 -o $@ $<

# A driver that can say whether a stream captures but not into which graph: put its
# directory in LD_LIBRARY_PATH to see the tracer name the graph from its own table.
$(FAKE_NOINFO_DRIVER): tests/fakes/fake_driver.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -DFAKECUDA_NO_CAPTURE_INFO_V3 -Wl,-soname,libcuda.so.1 -o $@ $<

$(FAKE_RUNTIME): tests/fakes/fake_runtime.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libcudart.so.13 -o $@ $< -ldl

$(FAKE_OBJDIR)/fake_runtime_static.o: tests/fakes/fake_runtime.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -fPIC -fvisibility=hidden -DFAKECUDART_STATIC -c -o $@ $<

$(FAKE_RT_STATIC): $(FAKE_OBJDIR)/fake_runtime_static.o
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

# With its profiler plugin loader (fake_nccl_profiler.c), as NCCL 2.23 and later have one.
$(FAKE_NCCL): tests/fakes/fake_nccl.c tests/fakes/fake_nccl_profiler.c tests/fakes/fake_nccl.map $(FAKE_RT_STATIC) $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libnccl.so.2 -Wl,--version-script=tests/fakes/fake_nccl.map \
	  -o $@ $< tests/fakes/fake_nccl_profiler.c $(FAKE_RT_STATIC) -ldl -lrt

# NCCL 2.29's ncclCommMemStats, calling itself 2.29.7: put its directory first in
# LD_LIBRARY_PATH to trace a process whose NCCL counts its own memory.
$(FAKE_NCCL_MEMSTATS): tests/fakes/fake_nccl.c tests/fakes/fake_nccl_profiler.c tests/fakes/fake_nccl.map $(FAKE_RT_STATIC) $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -DFAKENCCL_MEMSTATS -Wl,-soname,libnccl.so.2 \
	  -Wl,--version-script=tests/fakes/fake_nccl.map \
	  -o $@ $< tests/fakes/fake_nccl_profiler.c $(FAKE_RT_STATIC) -ldl -lrt

$(FAKES_DIR)/libcuda.so: | $(FAKE_DRIVER)
	ln -sf libcuda.so.1 $@
$(FAKES_DIR)/libcudart.so: | $(FAKE_RUNTIME)
	ln -sf libcudart.so.13 $@
$(FAKES_DIR)/libnccl.so: | $(FAKE_NCCL)
	ln -sf libnccl.so.2 $@

# ---- programs
$(FAKES_DIR)/progs/fake_cudart: tests/progs/fake_cudart.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart

$(FAKES_DIR)/progs/fake_cudart_static: tests/progs/fake_cudart.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DSTATIC_CUDART -o $@ $< $(FAKE_RT_STATIC) $(FAKE_LDFLAGS)

$(FAKES_DIR)/progs/fake_driver_vmm: tests/progs/fake_driver_vmm.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart

$(FAKES_DIR)/progs/fake_nccl_2proc: tests/progs/fake_nccl_2proc.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

$(FAKES_DIR)/progs/fake_nccl_1proc: tests/progs/fake_nccl_1proc.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

$(FAKES_DIR)/progs/untracked_prog: tests/progs/untracked_prog.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart -lcuda

$(FAKES_DIR)/progs/fake_abi_check_fake: tests/progs/fake_abi_check.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $<

$(FAKES_DIR)/progs/fake_abi_check_real: tests/progs/fake_abi_check.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(OPT) -DUSE_REAL_HEADERS -I/usr/local/cuda/include -w -o $@ $<

# The suite loads the fakes in-process (every Criterion test runs in its own process,
# so each starts with fresh simulated devices) and runs the programs above.
$(BUILD)/tests/test_fakes: $(FAKE_LIBS) $(FAKE_PROGS)
# Not linked with the tracer's archives: their hooks (cu*, cuda*, nccl*, dlsym) would
# stand in front of the fakes under test.
$(BUILD)/tests/test_fakes: private TEST_LIBS = -L$(FAKES_ABS) -Wl,-rpath,$(FAKES_ABS) -lnccl -lcudart -lcuda \
  -lcriterion -lpthread -ldl -lrt
$(BUILD)/tests/test_fakes: private ALLCFLAGS += -Itests/fakes -DFAKES_DIR='"$(FAKES_ABS)"'
