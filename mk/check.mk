# mk/check.mk: the check/diff tests' extras: a leaking NCCL test program built on the fakes (never sanitized).

CHECK_PROG_DIR := $(BUILD)/check
CHECK_STEPS    := $(CHECK_PROG_DIR)/nccl_steps

$(CHECK_STEPS): tests/progs/nccl_steps.c tests/progs/rank_id.h $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

# test_check runs the real pipeline: gpumemtrace run + the preload library + the fakes.
$(BUILD)/tests/test_check: | $(CHECK_STEPS) $(FAKE_PROG_fake_nccl_2proc) $(LIB_SO) $(CLI)
test-extras: $(CHECK_STEPS)
# test_check needs only the CLI's code: linking libinterpose.a would let its dlsym
# override (hooks_dl.c) interpose on ASan's own start-up lookups.
$(BUILD)/tests/test_check: TEST_LIBS = $(TOOL_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl
