# mk/hooks.mk: programs and plugins the interception tests (test_intercept, test_hooks, test_arrays, test_graph, test_dlsym, test_conformance) run under the tracer.
#
# In $(HOOK_DIR) = $(BUILD)/hookprogs, built with plain flags (never sanitized: the tracer
# is preloaded into them):
#   hook_paths         tests/progs/hook_paths.c: driver/runtime calls through each lookup path
#   graph_paths        tests/progs/graph_paths.c: stream capture and graph memory, each path
#   hook_scope         tests/progs/hook_scope.c: dlopen(RTLD_LOCAL) plugin, RTLD_NEXT/DEFAULT
#   free_race          tests/progs/free_race.c: an address taken again while its free runs
#   libhook_plugin.so  tests/progs/hook_plugin.c: linked with the fake libcudart (and libnccl)
#   libhook_next_a.so, libhook_next_b.so   tests/progs/hook_next.c built twice
# The suites get the paths as -D defines.

HOOK_DIR    := $(BUILD)/hookprogs
HOOK_ABS     = $(abspath $(HOOK_DIR))
HOOK_PROGS  := $(HOOK_DIR)/hook_paths $(HOOK_DIR)/graph_paths $(HOOK_DIR)/hook_scope $(HOOK_DIR)/libhook_plugin.so \
               $(HOOK_DIR)/free_race \
               $(HOOK_DIR)/libhook_next_a.so $(HOOK_DIR)/libhook_next_b.so
HOOK_SOFLAGS := -shared -fPIC -Wl,-rpath,$(HOOK_ABS)

test-extras: $(HOOK_PROGS)

$(HOOK_DIR)/hook_paths: tests/progs/hook_paths.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart -lcuda

$(HOOK_DIR)/free_race: tests/progs/free_race.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart -lcuda

$(HOOK_DIR)/graph_paths: tests/progs/graph_paths.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart -lcuda

$(HOOK_DIR)/libhook_next_a.so: tests/progs/hook_next.c $(FAKE_HDRS) $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(HOOK_SOFLAGS) -DHOOK_NEXT_ID=1 -Wl,-soname,libhook_next_a.so -o $@ $< -ldl

$(HOOK_DIR)/libhook_next_b.so: tests/progs/hook_next.c $(FAKE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(HOOK_SOFLAGS) -DHOOK_NEXT_ID=2 -Wl,-soname,libhook_next_b.so -o $@ $< -ldl

$(HOOK_DIR)/libhook_plugin.so: tests/progs/hook_plugin.c $(FAKE_HDRS) $(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) $(HOOK_SOFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lnccl -lcudart

$(HOOK_DIR)/hook_scope: tests/progs/hook_scope.c $(HOOK_DIR)/libhook_next_a.so $(HOOK_DIR)/libhook_next_b.so $(FAKE_RT_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(HOOK_ABS) -Wl,-rpath,$(HOOK_ABS) -Wl,--no-as-needed \
	  -lhook_next_a -lhook_next_b $(FAKE_LDFLAGS) -lcuda

HOOK_TEST_DEFS = -DHOOK_SRC='"$(abspath .)"' -DHOOK_DIR='"$(HOOK_ABS)"' -DHOOK_LIB='"$(abspath $(LIB_SO))"' \
                 -DHOOK_FAKES='"$(FAKES_ABS)"' -DHOOK_STATIC_PROG='"$(abspath $(FAKES_DIR))/progs/fake_cudart_static"'
$(BUILD)/tests/test_intercept $(BUILD)/tests/test_arrays $(BUILD)/tests/test_graph $(BUILD)/tests/test_dlsym $(BUILD)/tests/test_conformance $(BUILD)/tests/test_hooks: private ALLCFLAGS += $(HOOK_TEST_DEFS)
$(BUILD)/tests/test_intercept $(BUILD)/tests/test_arrays $(BUILD)/tests/test_graph $(BUILD)/tests/test_dlsym $(BUILD)/tests/test_conformance $(BUILD)/tests/test_hooks: $(HOOK_PROGS) $(LIB_SO) $(FAKE_PROGS)
$(BUILD)/tests/test_graph: $(FAKE_NOINFO_DRIVER)
