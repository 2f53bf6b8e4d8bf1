# mk/watch.mk: `watch`'s test extras: a 2-rank job on the fakes that runs for a set time (never sanitized: the tracer is preloaded into it).

WATCH_DIR := $(BUILD)/watch
WATCH_JOB := $(WATCH_DIR)/watch_job

$(WATCH_JOB): tests/progs/watch_job.c tests/progs/rank_id.h $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

# test_watch runs the real pipeline: gpumemtrace run + the preload library + the fakes,
# the CLI in a terminal (tmux) and its endpoint (promtool), each skipped when missing.
$(BUILD)/tests/test_watch: | $(WATCH_JOB) $(LIB_SO) $(CLI)
test-extras: $(WATCH_JOB)
# the CLI's code only, as test_check: libinterpose.a's dlsym would stand before ASan's
$(BUILD)/tests/test_watch: TEST_LIBS = $(TOOL_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl
