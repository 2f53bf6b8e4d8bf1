# mk/nvtx.mk: NVTX phases' tests: test_phases runs the PyPI nvtx package (tests/phases_client.py) against the simulated runtime under `gpumemtrace run`.

$(BUILD)/tests/test_phases: private ALLCFLAGS += -DNVTX_SRC='"$(abspath .)"'
$(BUILD)/tests/test_phases: $(LIB_SO) $(CLI) $(FAKE_RT_LIBS) tests/phases_client.py
