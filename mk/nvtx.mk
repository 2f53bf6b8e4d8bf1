# mk/nvtx.mk: NVTX phases' tests: test_phases runs the PyPI nvtx package (tests/phases_client.py) against the simulated runtime under `gpumemtrace run`.

$(BUILD)/tests/test_phases: private ALLCFLAGS += -DNVTX_SRC='"$(abspath .)"'
$(BUILD)/tests/test_phases: $(LIB_SO) $(CLI) $(FAKE_RT_LIBS) tests/phases_client.py

# make bench: NVTX push/pop pairs through a copy's slots, with the library injected or none
# (tests/bench/nvtx_bench.c; the row "nvtx push+pop" of tests/bench/run.sh).
$(BENCH_DIR)/nvtx_bench: tests/bench/nvtx_bench.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) -o $@ $< -ldl
bench-progs: $(BENCH_DIR)/nvtx_bench
