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

# `make fuzz`: libFuzzer target for the reader and dump's printer (needs clang).
# `make fuzz-run FUZZ_SECONDS=N` runs it from the seed corpus. Not part of `make test`:
# test_reader replays the seed corpus through the same entry function instead.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_BIN     := $(BUILD)/fuzz/fuzz_reader
FUZZ_SRC     := tests/fuzz/fuzz_reader.c tools/reader.c tools/cmd_dump.c tools/util.c \
                tools/trace.c tools/trace_load.c tools/trace_expand.c tools/trace_iter.c \
                tools/u64map.c
.PHONY: fuzz fuzz-run
fuzz:
	@if command -v $(FUZZ_CC) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(FUZZ_BIN); \
	else echo "make fuzz: $(FUZZ_CC) not found; the fuzz target needs clang (libFuzzer)"; fi

$(FUZZ_BIN): $(FUZZ_SRC) tools/reader.h tools/util.h tools/cli.h tools/trace.h tools/trace_runs.h \
            format/trace_format.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -Iformat -Itools -o $@ $(FUZZ_SRC)

fuzz-run: fuzz
	@mkdir -p $(BUILD)/fuzz/corpus
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz/corpus tests/fuzz/corpus
