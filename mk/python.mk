# mk/python.mk: Python frames in stacks: the native-thread helper of tests/python and the shell check that runs it (tests/golden/python-frames.sh).

PY_T := $(BUILD)/tests/python
$(PY_T)/pyhelper.so: tests/python/pyhelper.c
	@mkdir -p $(@D)
	$(CC) $(CSTD) $(WARN) $(OPT) -fPIC -shared -o $@ $< -ldl -lpthread
test-extras: $(PY_T)/pyhelper.so $(FAKE_LIBS)
