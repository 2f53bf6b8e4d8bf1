# mk/untracked.mk: test_untracked runs the real pipeline (gpumemtrace run, the preload library, the fakes and the fake NVML) on untracked_prog, and on the NCCL scenarios' non-blocking communicator.

$(BUILD)/tests/test_untracked: | $(FAKE_PROG_untracked_prog) $(FAKE_NVML) $(LIB_SO) $(CLI) $(NCCL_PROG)
# only the CLI's code, as test_check: libinterpose.a's dlsym would interpose on ASan's lookups
$(BUILD)/tests/test_untracked: TEST_LIBS = $(TOOL_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl
$(BUILD)/tests/test_untracked: private ALLCFLAGS += -Itests/fakes
