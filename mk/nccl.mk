# mk/nccl.mk: the NCCL hooks' test program (on the fakes, plain flags: the tracer gets preloaded into it) and what test_nccl_hooks and test_nccl_comms need.
NCCL_PROG := $(FAKES_DIR)/progs/nccl_scenarios

# The program refers to NCCL only weakly: --no-as-needed keeps libnccl.so.2 loaded.
# Until the fake NCCL exists the suite builds without the program and skips what needs it.
ifneq ($(wildcard tests/fakes/fake_nccl.c),)
$(NCCL_PROG): tests/progs/nccl_scenarios.c libinterpose/nccl_abi.h format/nccl_types.h $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -Iformat -Ilibinterpose -o $@ $< $(FAKE_LDFLAGS) -Wl,--no-as-needed -lnccl -lcudart -Wl,--as-needed
test-extras: $(NCCL_PROG)
$(BUILD)/tests/test_nccl_hooks: $(NCCL_PROG)
$(BUILD)/tests/test_nccl_hooks: private ALLCFLAGS += -DNCCL_PROG='"$(abspath $(NCCL_PROG))"'
$(BUILD)/tests/test_nccl_comms: $(NCCL_PROG) $(LIB_SO)
$(BUILD)/tests/test_nccl_comms: private ALLCFLAGS += -DNCCL_PROG='"$(abspath $(NCCL_PROG))"' \
  -DHOOK_LIB='"$(abspath $(LIB_SO))"'
endif
$(BUILD)/tests/test_nccl_hooks: $(LIB_SO)
$(BUILD)/tests/test_nccl_hooks: private ALLCFLAGS += -DLIB_SO='"$(abspath $(LIB_SO))"'
# test_crash runs the scenarios too (a crash while another thread is in an NCCL call).
ifneq ($(wildcard tests/fakes/fake_nccl.c),)
$(BUILD)/tests/test_crash: $(NCCL_PROG) $(LIB_SO)
$(BUILD)/tests/test_crash: private ALLCFLAGS += -DNCCL_PROG='"$(abspath $(NCCL_PROG))"' -DLIB_SO='"$(abspath $(LIB_SO))"'
endif
