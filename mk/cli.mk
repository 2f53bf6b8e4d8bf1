# mk/cli.mk: the CLI foundation's extra rules: golden trace generator, reader fuzz target, golden refresh.

# Writes the stored golden traces and the fuzz seed corpus; a golden check makes sure
# the committed files are what it writes.
GEN_GOLDEN := $(BUILD)/tests/gen_golden
$(GEN_GOLDEN): tests/golden/gen_golden.c tests/golden/tracebuild.h format/trace_format.h
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -Iformat -o $@ $<
test-extras: $(GEN_GOLDEN)

# `make golden-update`: rewrite the stored inputs and expected outputs after an
# intended change; review the diff before committing it.
.PHONY: golden-update
golden-update: $(GEN_GOLDEN) $(CLI)
	$(GEN_GOLDEN) tests/golden tests/fuzz/corpus
	$(CLI) dump tests/golden/sample.gmt >tests/golden/dump.expected
	$(CLI) dump tests/golden/cut.gmt >tests/golden/dump-cut.expected 2>tests/golden/dump-cut.stderr

# `make fuzz`: the libFuzzer targets (clang; ASan and UBSan by construction), each an
# entry function in tests/fuzz/fuzz_TARGET.c:
#   reader    the reader, dump's printer, the GROUP_REPEAT expansion
#   summary   the loader, the replay, summary's model, the text, JSON and CSV renderers
#   models    merge, diff and check's models over two traces, their renderers, baselines
#   baseline  the baseline (and JSON) parser
#   args      each command's option parsing, from an argv made of the input
#   watch     watch's follow, fold and apply on a trace appended in pieces (cut anywhere,
#             now and then cut back), its view as text, JSON and metrics
# `make fuzz-run FUZZ_SECONDS=N` runs each for N seconds from the seed corpus (the
# golden traces, tests/fuzz/corpus, the regression inputs). Not part of `make test`:
# there, tests/golden/fuzz-regress.sh replays the seed corpus and every regression
# input under tests/fuzz/regress/TARGET/ through the same entry functions, built
# without libFuzzer (fuzz-replay-TARGET) in the test build's own mode.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := reader summary models baseline args watch
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_TOOLS   := $(filter-out tools/main.c,$(TOOL_SRC))
FUZZ_DEPS    := $(FUZZ_TOOLS) $(wildcard tools/*.h) tests/fuzz/fuzz_common.h format/trace_format.h
.PHONY: fuzz fuzz-run
fuzz:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(FUZZ_BINS); \
	else echo "make fuzz: $(FUZZ_CC) not found; the fuzz targets need clang (libFuzzer)"; fi

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DEPS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -Iformat -Itools -Itests -o $@ $< $(FUZZ_TOOLS) $(TOOL_LIBS)

# each target's seeds: the traces for all but baseline (JSON baselines) and args (argvs)
# (absolute: the args target works in a directory of its own)
fuzz_seeds = $(abspath $(if $(filter baseline,$(1)),tests/fuzz/seeds/baseline,$(if $(filter args,$(1)),tests/fuzz/seeds/args,tests/fuzz/corpus tests/fuzz/seeds/traces)) \
             $(wildcard tests/fuzz/regress/$(1)))

# one target's run: stops make (exit 1) on a crash, leak, hang or timeout, whose input
# libFuzzer leaves in $(BUILD)/fuzz/crash-TARGET-*
fuzz_one = mkdir -p $(abspath $(BUILD))/fuzz/corpus-$(1) && echo "fuzz_$(1): $(FUZZ_SECONDS) s" && \
  { $(BUILD)/fuzz/fuzz_$(1) -max_total_time=$(FUZZ_SECONDS) -max_len=16384 -timeout=10 \
    $(if $(filter args,$(1)),-close_fd_mask=3) -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=$(abspath $(BUILD))/fuzz/crash-$(1)- $(abspath $(BUILD))/fuzz/corpus-$(1) \
    $(call fuzz_seeds,$(1)) >$(BUILD)/fuzz/run-$(1).log 2>&1; st=$$?; \
    grep -E '^(stat::number_of_executed_units|SUMMARY|.*Test unit written)' $(BUILD)/fuzz/run-$(1).log; \
    [ $$st = 0 ] || { tail -n 40 $(BUILD)/fuzz/run-$(1).log; false; }; }

fuzz-run: fuzz
	@$(foreach t,$(FUZZ_TARGETS),$(call fuzz_one,$(t)) && ) true

# the entry functions without libFuzzer, for make test
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz-replay-%)
$(BUILD)/tests/fuzz-replay-%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c tests/fuzz/fuzz_common.h $(TOOL_A)
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -Iformat -Itools -Itests -o $@ $< tests/fuzz/replay_main.c \
	  $(TOOL_A) $(TOOL_LIBS)
test-extras: $(FUZZ_REPLAY)
