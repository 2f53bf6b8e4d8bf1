# mk/bench.mk: `make bench`: the tracer's CPU overhead, trace size and CLI throughput, ending in one table (tests/bench/run.sh).
#
# In $(BENCH_DIR) = $(BUILD)/bench, plain flags (never sanitized: the tracer is preloaded):
#   alloc_bench_fake   tests/bench/alloc_bench.c on the simulated driver (tests/fakes)
#   alloc_bench_stub   the same on stub/libcuda.so.1, whose calls return at once
#   nccl_bench         ncclAllReduce against stub/libnccl.so.2 (returns at once)
#   nccl_bench_prof    the same against stub-prof/libnccl.so.2, which also loads
#                      NCCL_PROFILER_PLUGIN and makes NCCL 2.28's plugin events per call
#   libnull-profiler.so  tests/bench/null_profiler.c: a plugin that does nothing
#   gen_trace          tests/bench/gen_trace.c: synthetic traces for `summary`
#   trace_feed         tests/bench/trace_feed.c: traces that grow at a set rate, for watch
#   repeat_trace       tests/bench/repeat_trace.c: a trace of repeated groups (GROUP_REPEAT),
#                      for the CLI's memory on them (docs/performance.md)
#   sample_bench       tests/bench/sample_bench.c on the simulated driver: an allocation loop
#                      of fixed length for `make bench-sampling` (tests/bench/sample.sh: the
#                      periodic device samples on and off; --gpu on a GPU host)
# BENCH_QUICK=1 runs fewer, shorter repetitions (a smoke test of the benchmark itself).

BENCH_DIR  := $(BUILD)/bench
BENCH_STUB := $(BENCH_DIR)/stub
BENCH_STUB_ABS = $(abspath $(BENCH_STUB))
BENCH_PROGS := $(BENCH_DIR)/alloc_bench_fake $(BENCH_DIR)/alloc_bench_stub $(BENCH_DIR)/nccl_bench \
               $(BENCH_DIR)/nccl_bench_prof $(BENCH_DIR)/libnull-profiler.so \
               $(BENCH_DIR)/gen_trace $(BENCH_DIR)/trace_feed $(BENCH_DIR)/sample_bench \
               $(BENCH_DIR)/repeat_trace
BENCH_STUB_FLAGS = -L$(BENCH_STUB_ABS) -Wl,-rpath,$(BENCH_STUB_ABS) -Wl,--no-as-needed

$(BENCH_STUB)/libcuda.so.1: tests/bench/stub_cuda.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libcuda.so.1 -o $@ $<
	ln -sf libcuda.so.1 $(@D)/libcuda.so

$(BENCH_STUB)/libnccl.so.2: tests/bench/stub_nccl.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libnccl.so.2 -o $@ $<
	ln -sf libnccl.so.2 $(@D)/libnccl.so

BENCH_STUB_PROF := $(BENCH_DIR)/stub-prof
BENCH_STUB_PROF_ABS = $(abspath $(BENCH_STUB_PROF))
$(BENCH_STUB_PROF)/libnccl.so.2: tests/bench/stub_nccl.c tests/fakes/fake_nccl_profiler.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -DSTUB_PROFILER -Wl,-soname,libnccl.so.2 -o $@ $< \
	  tests/fakes/fake_nccl_profiler.c -ldl
	ln -sf libnccl.so.2 $(@D)/libnccl.so

# FAKE_LIBS comes from mk/fakes.mk, which is read after this file.
.SECONDEXPANSION:
$(BENCH_DIR)/alloc_bench_fake: tests/bench/alloc_bench.c $(FAKE_HDRS) $$(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcuda

$(BENCH_DIR)/alloc_bench_stub: tests/bench/alloc_bench.c $(FAKE_HDRS) $(BENCH_STUB)/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(BENCH_STUB_FLAGS) -lcuda

$(BENCH_DIR)/nccl_bench: tests/bench/nccl_bench.c $(FAKE_HDRS) $(BENCH_STUB)/libcuda.so.1 $(BENCH_STUB)/libnccl.so.2
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(BENCH_STUB_FLAGS) -lnccl -lcuda

$(BENCH_DIR)/libnull-profiler.so: tests/bench/null_profiler.c
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -o $@ $<

$(BENCH_DIR)/nccl_bench_prof: tests/bench/nccl_bench.c $(FAKE_HDRS) $(BENCH_STUB)/libcuda.so.1 $(BENCH_STUB_PROF)/libnccl.so.2
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(BENCH_STUB_PROF_ABS) -Wl,-rpath,$(BENCH_STUB_PROF_ABS) $(BENCH_STUB_FLAGS) -lnccl -lcuda

$(BENCH_DIR)/sample_bench: tests/bench/sample_bench.c $(FAKE_HDRS) $$(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcuda

$(BENCH_DIR)/gen_trace: tests/bench/gen_trace.c format/trace_format.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) -Iformat -o $@ $<

$(BENCH_DIR)/repeat_trace: tests/bench/repeat_trace.c tests/golden/tracebuild.h format/trace_format.h
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) -Iformat -o $@ $<

$(BENCH_DIR)/trace_feed: tests/bench/trace_feed.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) -o $@ $<

.PHONY: bench bench-progs bench-sampling
bench-progs: $(BENCH_PROGS) $(LIB_SO) $(CLI)
bench: all bench-progs
	@BENCH_QUICK=$(BENCH_QUICK) ./tests/bench/run.sh $(BUILD)
# The periodic samples' cost (docs/writer.md, "Device samples"); BENCH_QUICK=1: 2 short rounds.
bench-sampling: all bench-progs $$(FAKE_NVML)
	@./tests/bench/sample.sh $(BUILD) $(if $(BENCH_QUICK),--reps 2 --secs 0.5)
