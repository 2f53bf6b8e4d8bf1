# mk/tsan.mk: `make tsan-test`: the library and the suites that run its threads in-process, under ThreadSanitizer.
#
# In $(TSAN_DIR) = $(BUILD)/tsan: the library's and the CLI's objects built with
# -fsanitize=thread, their archives, and the suites of TSAN_SUITES linked with them and
# with tests/tsan/criterion/criterion.h in place of Criterion (which can't start under
# TSan: that header says why).
# Only suites whose threads run inside the test process are worth it: a suite that
# preloads the (plain) library into a program checks nothing under TSan (the parts of
# test_nccl_hooks and test_crash that do still run, unchecked). TSAN_OPTIONS make any
# report fail its suite; tests/tsan.supp holds the races that are meant, one reason per
# line. `make tsan-tests` only builds.
#
# The library defines dlsym, dlvsym, dlopen and dlclose (hooks_dl.c). In a test binary
# they would stand in front of glibc's for TSan's own start-up, which looks up the real
# functions it intercepts with dlsym before it can run instrumented code: our router is
# instrumented and dies in __tsan_func_entry. So the TSan archive's copy of hooks_dl.o
# has those four names made local (objcopy): TSan and the tests get glibc's, every
# line of the library stays instrumented. The suites below reach no code through them;
# the dl hooks are checked by the preload suites (test_dlsym, test_robust).
TSAN_SUITES  := writer clock stack intern modules crash nccl_hooks sampling nvtx nccl_profiler_abi unwind query
TSAN_DIR     := $(BUILD)/tsan
# -Wno-tsan: TSan does not model atomic_thread_fence (gmt_now_ns's seqlock has one); every
# field that seqlock guards is an atomic, so no race can hide behind it.
TSAN_FLAGS   := -fsanitize=thread -Wno-tsan
TSAN_LIB_OBJ := $(LIB_SRC:%.c=$(TSAN_DIR)/obj/%.o)
TSAN_TOOL_OBJ := $(filter-out %/main.o,$(TOOL_SRC:%.c=$(TSAN_DIR)/obj/%.o))
TSAN_LIB_A   := $(TSAN_DIR)/libinterpose.a
TSAN_TOOL_A  := $(TSAN_DIR)/libtools.a
TSAN_BINS    := $(TSAN_SUITES:%=$(TSAN_DIR)/tests/test_%)
TSAN_DL_HOOKS := dlsym dlvsym dlopen dlclose
# libunwind with its trace cache's key destructor taken out: tests/tsan/unwind_key.c says why.
TSAN_UNWIND_A := $(TSAN_DIR)/libunwind.a
TSAN_EXTRA_OBJ := $(TSAN_DIR)/obj/unwind_key.o
# ASLR off: TSan's shadow layout does not fit every mmap_rnd_bits setting of newer
# kernels ("unexpected memory mapping"); setarch -R sidesteps it where it is allowed.
TSAN_RUN     := $(if $(shell setarch -R true 2>/dev/null && echo y),setarch -R)

$(TSAN_DIR)/obj/libinterpose/%.o: libinterpose/%.c | $(UNWIND_A)
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(LIB_CFLAGS) $(TSAN_FLAGS) -c $< -o $@

$(TSAN_DIR)/obj/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(TSAN_FLAGS) -Iformat -c $< -o $@

$(TSAN_DIR)/hooks_dl_local.o: $(TSAN_DIR)/obj/libinterpose/hooks_dl.o
	objcopy $(TSAN_DL_HOOKS:%=--localize-symbol=%) $< $@

$(TSAN_UNWIND_A): $(UNWIND_A)
	@mkdir -p $(@D)
	objcopy --redefine-sym pthread_key_create=gmt_tsan_unwind_key_create $< $@

$(TSAN_EXTRA_OBJ): tests/tsan/unwind_key.c
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) -c $< -o $@

$(TSAN_LIB_A): $(filter-out %/hooks_dl.o,$(TSAN_LIB_OBJ)) $(TSAN_DIR)/hooks_dl_local.o
	@rm -f $@
	ar rcs $@ $^

$(TSAN_TOOL_A): $(TSAN_TOOL_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The same defines and extras as the plain suites (mk/nccl.mk, mk/stack.mk, mk/sampling.mk).
$(TSAN_DIR)/tests/test_nccl_hooks: private ALLCFLAGS += -DLIB_SO='"$(abspath $(LIB_SO))"' \
  $(if $(wildcard tests/fakes/fake_nccl.c),-DNCCL_PROG='"$(abspath $(NCCL_PROG))"')
$(TSAN_DIR)/tests/test_stack: private ALLCFLAGS += -rdynamic
$(TSAN_DIR)/tests/test_sampling: private ALLCFLAGS += -DSAMPLE_PROG='"$(abspath $(SAMPLE_PROG))"' \
  -DSAMPLE_LIB='"$(abspath $(LIB_SO))"' -DSAMPLE_FAKES='"$(FAKES_ABS)"'

$(TSAN_DIR)/tests/test_%: tests/test_%.c tests/tsan/criterion/criterion.h $(TSAN_LIB_A) $(TSAN_TOOL_A) \
                          $(TSAN_UNWIND_A) $(TSAN_EXTRA_OBJ)
	@mkdir -p $(@D)
	@ln -sfn ../../tests/stack $(@D)/stack
	$(CC) $(ALLCFLAGS) $(TSAN_FLAGS) -Itests/tsan -I$(UNWIND_DIR)/include -Iformat -Ilibinterpose -Itools \
	  -o $@ $< $(TSAN_EXTRA_OBJ) -Wl,--undefined=gmt_init_once -Wl,--start-group $(TSAN_LIB_A) $(TSAN_TOOL_A) $(TSAN_UNWIND_A) $(TOOL_LIBS) \
	  -lpthread -ldl -Wl,--end-group

TSAN_ENV = TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 die_after_fork=0 \
  suppressions=$(abspath tests/tsan.supp) $(TSAN_OPTIONS)"

# The runner itself, first: hung tests must come back as TIMEOUT with nothing left running.
TSAN_RUNNER_CHECK := $(TSAN_DIR)/tests/runner_check
$(TSAN_RUNNER_CHECK): tests/tsan/runner_check.c tests/tsan/criterion/criterion.h
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) -Itests/tsan -o $@ $<

.PHONY: tsan-test tsan-tests tsan-runner-check
tsan-runner-check: $(TSAN_RUNNER_CHECK)
	@log=$(TSAN_RUNNER_CHECK).log; pidf=$(TSAN_RUNNER_CHECK).pid; t0=$$(date +%s); rm -f $$pidf; \
	if RUNNER_CHECK_PIDFILE=$$pidf $(TSAN_RUNNER_CHECK) >$$log 2>&1; then \
	  echo "tsan runner: a failing suite passed" >&2; exit 1; fi; \
	for want in 'runner::hangs_with_every_signal_blocked: TIMEOUT' 'runner::hangs_with_a_child: TIMEOUT' \
	            'Tested: 4 | Passing: 1 | Failing: 1 | Crashing: 2'; do \
	  grep -qF "$$want" $$log || { echo "tsan runner: no '$$want' in $$log" >&2; tail -n 20 $$log >&2; exit 1; }; done; \
	pid=$$(cat $$pidf 2>/dev/null); [ -n "$$pid" ] || { echo "tsan runner: the child's pid was not written" >&2; exit 1; }; \
	if [ -n "$$(ps -o stat= -p $$pid 2>/dev/null | grep -v Z)" ]; then \
	  echo "tsan runner: a hung test's child outlived it" >&2; kill -9 $$pid; exit 1; fi; \
	echo "tsan runner: hung tests end as TIMEOUT ($$(($$(date +%s) - t0)) s)"

tsan-tests: $(TSAN_BINS)
tsan-test: all test-extras $(TSAN_BINS) tsan-runner-check
	@fail=""; for t in $(TSAN_BINS); do \
	  t0=$$(date +%s); \
	  if $(TSAN_ENV) $(TSAN_RUN) $$t --jobs 2 --short-filename >$$t.log 2>&1; then st=ok; \
	  else st=FAIL; fail="$$fail $${t##*/}"; fi; \
	  printf '%-28s %s %s%s s\n' "tsan/$${t##*/}" $$st "$$(grep -o 'Tested: .*' $$t.log | tail -n 1)" \
	    $$(($$(date +%s) - t0)); \
	  [ $$st = ok ] || grep -v '^\[----\]   ' $$t.log | tail -n 80 | sed 's/^/    /'; \
	done; \
	if [ -n "$$fail" ]; then echo "tsan-test failed:$$fail" >&2; exit 1; fi; echo "tsan-test: no data race reported"

# Its objects' header dependencies (-MMD): the top Makefile's include covers $(BUILD)'s
# own objects only, so without this a changed header left these stale.
-include $(wildcard $(TSAN_DIR)/obj/*/*.d $(TSAN_DIR)/obj/*.d $(TSAN_DIR)/tests/*.d)
