# mk/robust.mk: programs and stand-in libraries for test_robust (deadlocks, dangling pointers, failed lookups, fork, exec, two copies of a library).
#
# In $(ROBUST_DIR) = $(BUILD)/robust, built with plain flags (never sanitized: the tracer
# is preloaded into them), from tests/progs/robust_*.c:
#   nccl/libnccl.so.2      robust_lib.c -DROBUST_NCCL: partial NCCL, non-blocking init
#   cuda/libcuda.so.1      robust_lib.c -DROBUST_CUDA: minimal driver
#   libx1.so libx2.so      robust_lib.c -DROBUST_X: something to dlopen and dlclose
#   rt13/libcudart.so.13, rt12/libcudart.so.12   robust_lib.c -DROBUST_RT: two runtime copies
#   libplug13.so libplug12.so                    robust_lib.c -DROBUST_USER, one per copy
#   robust_dlrace robust_group robust_stale robust_miss robust_nonblock robust_fork robust_two robust_exec
#   robust_env: fds, file size limit, environment and an NVTX client, against the fake runtime
# The suite gets the directory and the tracer's path as -D defines.

ROBUST_DIR  := $(BUILD)/robust
ROBUST_ABS   = $(abspath $(ROBUST_DIR))
ROBUST_CFLAGS = $(CSTD) $(WARN) $(OPT) -pthread
ROBUST_SO    = $(ROBUST_CFLAGS) -shared -fPIC -fvisibility=hidden
ROBUST_SRC  := tests/progs/robust_lib.c
ROBUST_NCCL_LD = -L$(ROBUST_ABS)/nccl -Wl,-rpath,$(ROBUST_ABS)/nccl -l:libnccl.so.2
ROBUST_PROGS := $(addprefix $(ROBUST_DIR)/,nccl/libnccl.so.2 cuda/libcuda.so.1 libx1.so libx2.so \
                rt13/libcudart.so.13 rt12/libcudart.so.12 libplug13.so libplug12.so \
                robust_dlrace robust_group robust_stale robust_miss robust_nonblock robust_fork robust_two \
                robust_exec robust_env)

test-extras: $(ROBUST_PROGS)

$(ROBUST_DIR)/nccl/libnccl.so.2: $(ROBUST_SRC) libinterpose/nccl_abi.h format/nccl_types.h
	@mkdir -p $(@D)
	$(CC) $(ROBUST_SO) -DROBUST_NCCL -Iformat -Ilibinterpose -Wl,-soname,libnccl.so.2 -o $@ $<

$(ROBUST_DIR)/cuda/libcuda.so.1: $(ROBUST_SRC)
	@mkdir -p $(@D)
	$(CC) $(ROBUST_SO) -DROBUST_CUDA -Wl,-soname,libcuda.so.1 -o $@ $<

$(ROBUST_DIR)/libx%.so: $(ROBUST_SRC)
	@mkdir -p $(@D)
	$(CC) $(ROBUST_SO) -DROBUST_X=$* -o $@ $<

# One runtime copy and its plugin per major version (make patterns take one % only).
define ROBUST_RT_RULES
$(ROBUST_DIR)/rt$(1)/libcudart.so.$(1): $(ROBUST_SRC)
	@mkdir -p $$(@D)
	$$(CC) $$(ROBUST_SO) -DROBUST_RT='"cudart $(1)"' -Wl,-soname,libcudart.so.$(1) -o $$@ $$<

$(ROBUST_DIR)/libplug$(1).so: $(ROBUST_SRC) $(ROBUST_DIR)/rt$(1)/libcudart.so.$(1)
	$$(CC) $$(ROBUST_SO) -DROBUST_USER -o $$@ $$< -L$$(ROBUST_ABS)/rt$(1) -Wl,-rpath,$$(ROBUST_ABS)/rt$(1) -l:libcudart.so.$(1)
endef
$(foreach v,12 13,$(eval $(call ROBUST_RT_RULES,$(v))))

$(ROBUST_DIR)/robust_dlrace: tests/progs/robust_dlrace.c
	@mkdir -p $(@D)
	$(CC) $(ROBUST_CFLAGS) -o $@ $< -ldl

$(ROBUST_DIR)/robust_stale: tests/progs/robust_stale.c
	@mkdir -p $(@D)
	$(CC) $(ROBUST_CFLAGS) -o $@ $< -ldl

$(ROBUST_DIR)/robust_two: tests/progs/robust_two.c
	@mkdir -p $(@D)
	$(CC) $(ROBUST_CFLAGS) -o $@ $< -ldl

$(ROBUST_DIR)/robust_miss $(ROBUST_DIR)/robust_nonblock: $(ROBUST_DIR)/%: tests/progs/%.c $(ROBUST_DIR)/nccl/libnccl.so.2 libinterpose/nccl_abi.h format/nccl_types.h
	$(CC) $(ROBUST_CFLAGS) -Iformat -Ilibinterpose -o $@ $< $(ROBUST_NCCL_LD)

$(ROBUST_DIR)/robust_group $(ROBUST_DIR)/robust_fork $(ROBUST_DIR)/robust_exec: $(ROBUST_DIR)/%: tests/progs/%.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

$(ROBUST_DIR)/robust_env: tests/progs/robust_env.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart

ROBUST_TEST_DEFS = -DROBUST_DIR='"$(ROBUST_ABS)"' -DHOOK_LIB='"$(abspath $(LIB_SO))"'
$(BUILD)/tests/test_robust: private ALLCFLAGS += $(ROBUST_TEST_DEFS)
$(BUILD)/tests/test_robust: $(ROBUST_PROGS) $(LIB_SO)
