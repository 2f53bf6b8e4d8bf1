# mk/stack.mk: shared objects for the stack, module-map and symbolizer tests (no sanitizers: they are dlopened).

STACK_T := $(BUILD)/tests/stack
STACK_SO := $(STACK_T)/libsymtest.so $(STACK_T)/libsymtest-nodebug.so $(STACK_T)/libsymtest-other.so \
            $(STACK_T)/libsitetest.so $(STACK_T)/libsymtest-stripped.so $(STACK_T)/libsymtest.debug
SYMTEST_CFLAGS := -std=c11 -O1 -fPIC -shared -fno-omit-frame-pointer

# Debug info and a content build-id: the good case.
$(STACK_T)/libsymtest.so: tests/stack/symtest.c
	@mkdir -p $(@D)
	$(CC) $(SYMTEST_CFLAGS) -g -Wl,--build-id=sha1 -o $@ $<
# No debug info and no .symtab: only exported names, then module+offset.
$(STACK_T)/libsymtest-nodebug.so: tests/stack/symtest.c
	@mkdir -p $(@D)
	$(CC) $(SYMTEST_CFLAGS) -s -Wl,--build-id=sha1 -o $@ $<
# Same code, a build-id no trace will name: stands for "the file changed since the trace".
$(STACK_T)/libsymtest-other.so: tests/stack/symtest.c
	@mkdir -p $(@D)
	$(CC) $(SYMTEST_CFLAGS) -g -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 -o $@ $<

# libsymtest.so split as distributions ship a library: stripped of every symbol table but
# .dynsym, its symbols and DWARF in a debug file of the same build-id.
$(STACK_T)/libsymtest-stripped.so: $(STACK_T)/libsymtest.so
	objcopy --strip-all $< $@
$(STACK_T)/libsymtest.debug: $(STACK_T)/libsymtest.so
	objcopy --only-keep-debug $< $@

# A runtime header's inline wrapper inlined into the user's function (test_sites).
$(STACK_T)/libsitetest.so: tests/stack/sitetest.c
	@mkdir -p $(@D)
	$(CC) $(SYMTEST_CFLAGS) -g -Wl,--build-id=sha1 -o $@ $<

$(BUILD)/tests/test_symbolize $(BUILD)/tests/test_modules $(BUILD)/tests/test_sites: | $(STACK_SO)
# dladdr names the test's own functions only when the program exports them.
$(BUILD)/tests/test_stack: private ALLCFLAGS += -rdynamic
test-extras: $(STACK_SO)

# `make bench-stack`: ns per gmt_stack_capture at recursion depths 0, 8, 20, 64 (docs/stacks.md).
STACK_BENCH := $(BUILD)/bench/stack_bench
$(STACK_BENCH): tests/bench/stack_bench.c $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) -I$(UNWIND_DIR)/include -Iformat -Ilibinterpose -o $@ $< $(LIB_WITH_INIT) $(UNWIND_A) -lpthread -ldl
.PHONY: bench-stack
bench-stack: $(STACK_BENCH)
	$(STACK_BENCH)
