# mk/export.mk: `gpumemtrace export --format sqlite` writes through SQLite (libsqlite3-dev),
# linked in statically where Debian's libsqlite3.a exists (the CLI then starts on machines
# without libsqlite3.so; scripts/check-cli-deps.sh checks it), else dynamically. Looked up
# when the link runs, as LIBDW_A is. The export tests (tests/test_export.c) run the CLI,
# Python 3 and its sqlite3 module; tests/export_check.py checks what they write.

SQLITE_A = $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/aarch64-linux-gnu/libsqlite3.a /usr/lib64/libsqlite3.a /usr/lib/libsqlite3.a))
SQLITE_STATIC := -Wl$(comma)-Bstatic -lsqlite3 -Wl$(comma)-Bdynamic
TOOL_LIBS += $(if $(SQLITE_A),$(SQLITE_STATIC),-lsqlite3) -lm -ldl -lpthread

$(BUILD)/tests/test_export: | $(CLI) $(BENCH_DIR)/gen_trace $(FAKE_PROG_fake_nccl_2proc) $(LIB_SO)
# it runs programs only: no need of the library's archive (whose dlsym override would
# interpose on ASan's own start-up lookups, as for test_check)
$(BUILD)/tests/test_export: TEST_LIBS = $(TOOL_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl
