# mk/explain.mk: test_explain runs the real pipeline (gpumemtrace run + the preload library + the fake NCCL).
$(BUILD)/tests/test_explain: | $(FAKE_PROG_fake_nccl_2proc) $(LIB_SO) $(CLI)
# only the CLI's code, as test_check: libinterpose.a's dlsym would interpose on ASan's lookups
$(BUILD)/tests/test_explain: TEST_LIBS = $(TOOL_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl
