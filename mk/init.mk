# mk/init.mk: programs for tests/test_init.c (library initialisation order); never sanitized.

INIT_PROGS_DIR := $(BUILD)/initprogs

.SECONDEXPANSION:
$(INIT_PROGS_DIR)/libearly_ctor.so: tests/progs/early_ctor_lib.c $$(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -shared -fPIC -o $@ $< $(FAKE_LDFLAGS) -lcudart

$(INIT_PROGS_DIR)/early_ctor_main: tests/progs/early_ctor_main.c $(INIT_PROGS_DIR)/libearly_ctor.so
	$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(abspath $(INIT_PROGS_DIR)) -Wl,-rpath,$(abspath $(INIT_PROGS_DIR)) \
	  -Wl,--no-as-needed -learly_ctor $(FAKE_LDFLAGS) -lcudart

test-extras: $(INIT_PROGS_DIR)/early_ctor_main
