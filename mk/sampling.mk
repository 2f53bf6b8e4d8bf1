# mk/sampling.mk: the simulated NVML and the program that test_sampling runs (device samples outside NCCL calls).
#
# Products (never sanitized: the tracer is preloaded into the program, and the tracer
# dlopens the NVML):
#   $(FAKES_DIR)/nvml/libnvidia-ml.so.1       tests/fakes/fake_nvml.c
#   $(FAKES_DIR)/nvml-old/libnvidia-ml.so.1   the same, -DFAKENVML_OLD: no _v2 handle lookup,
#                                             no _v3 process list (an older driver)
#   $(BUILD)/sampling/sample_prog             tests/progs/sample_prog.c on the fake driver
# Each NVML is in a directory of its own: a run sees one only when that directory is in
# its LD_LIBRARY_PATH (NVML is dlopened by the tracer, which has no run path), so the
# other suites run without NVML, as on a machine without the driver.

FAKE_NVML     := $(FAKES_DIR)/nvml/libnvidia-ml.so.1
FAKE_NVML_OLD := $(FAKES_DIR)/nvml-old/libnvidia-ml.so.1
SAMPLE_PROG   := $(BUILD)/sampling/sample_prog

$(FAKE_NVML): tests/fakes/fake_nvml.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

$(FAKE_NVML_OLD): tests/fakes/fake_nvml.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(FAKE_SOFLAGS) -DFAKENVML_OLD -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

$(SAMPLE_PROG): tests/progs/sample_prog.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcuda

test-extras: $(FAKE_NVML) $(FAKE_NVML_OLD) $(SAMPLE_PROG)
$(BUILD)/tests/test_sampling: | $(FAKE_NVML) $(FAKE_NVML_OLD) $(SAMPLE_PROG) $(LIB_SO)
$(BUILD)/tests/test_sampling: private ALLCFLAGS += -DSAMPLE_PROG='"$(abspath $(SAMPLE_PROG))"' \
  -DSAMPLE_LIB='"$(abspath $(LIB_SO))"' -DSAMPLE_FAKES='"$(FAKES_ABS)"'
