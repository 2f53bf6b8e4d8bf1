# Makefile: builds the preload library, the CLI, the simulated CUDA/NCCL and the tests.
# Targets: all (default), test, demo, bench, tsan-test (mk/tsan.mk), install and uninstall
# (mk/install.mk), clean. Build products land in build/.
# Parts add their own rules in mk/*.mk (one file per part, included below).

CC       ?= cc
BUILD    ?= build
SAN      ?=
WERROR   ?=
OPT      ?= -O2 -g
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter $(if $(WERROR),-Werror)
CSTD     := -std=c11 -D_GNU_SOURCE
comma    := ,
SANFLAGS := $(if $(SAN),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
CFLAGS   ?= $(OPT)
ALLCFLAGS = $(CSTD) $(WARN) $(CFLAGS) -MMD -MP

# Debian's libunwind.a is not position-independent: scripts/build-libunwind.sh builds
# Debian's libunwind source package once as a PIC archive, kept in $(BUILD)/libunwind-pic.
UNWIND_DIR := $(BUILD)/libunwind-pic
UNWIND_A   := $(UNWIND_DIR)/lib/libunwind.a

# ---- preload library: libinterpose/*.c -> build/libgpumemtrace.so (glibc only at run time)
LIB_SRC  := $(wildcard libinterpose/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB_SO   := $(BUILD)/libgpumemtrace.so
LIB_A    := $(BUILD)/libinterpose.a
LIB_CFLAGS = -I$(UNWIND_DIR)/include -fPIC -Iformat -fvisibility=hidden -fno-omit-frame-pointer -ftls-model=initial-exec

# ---- CLI: tools/*.c -> build/gpumemtrace
TOOL_SRC := $(wildcard tools/*.c)
TOOL_OBJ := $(TOOL_SRC:%.c=$(BUILD)/obj$(SAN:%=-san)/%.o)
TOOL_A   := $(BUILD)/libtools$(SAN:%=-san).a
CLI      := $(BUILD)/gpumemtrace
# elfutils is linked in statically where its archives exist, so build/gpumemtrace runs on
# machines without libdw (GPU machines often have none). LIBDW_A is looked up when the link
# runs, not when make starts: on a fresh machine `deps` installs libdw-dev first.
LIBDW_A   = $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libdw.a /usr/lib/aarch64-linux-gnu/libdw.a /usr/lib64/libdw.a /usr/lib/libdw.a))
DW_STATIC := -Wl,-Bstatic -ldw -lelf -lz -llzma -lbz2 -Wl,-Bdynamic
DW_SHARED := -ldw -lelf
TOOL_LIBS  = $(if $(LIBDW_A),$(DW_STATIC),$(DW_SHARED)) -ldl -lpthread -lm

# ---- tests: tests/test_*.c -> build/tests/test_* (Criterion), each linked with both archives
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# A program linked from the archive gets an object only when something names it. The
# preloaded library always has its constructor (init.o), which no other object names
# (the writer reaches it through a section entry, docs/layers.md): so name it.
LIB_WITH_INIT = -Wl,--undefined=gmt_init_once $(LIB_A)
TEST_LIBS = $(LIB_WITH_INIT) $(TOOL_A) $(UNWIND_A) $(TOOL_LIBS) -lcriterion -lpthread -ldl

.PHONY: all lib cli tests test demo bench clean deps
all: deps lib cli

deps:
	@./scripts/check-deps.sh

lib: $(LIB_SO)
cli: $(CLI)

$(UNWIND_A): scripts/build-libunwind.sh
	./scripts/build-libunwind.sh $(BUILD)

$(BUILD)/obj/libinterpose/%.o: libinterpose/%.c | $(UNWIND_A)
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(LIB_CFLAGS) -c $< -o $@

# LIB_MAP, LIB_LDFLAGS, LIB_CHECK: what a sanitized build changes (mk/san.mk).
LIB_MAP     ?= libinterpose/exports.map
LIB_LDFLAGS ?=
LIB_CHECK   ?= ./scripts/check-lib-deps.sh
$(LIB_SO): $(LIB_OBJ) $(LIB_MAP) $(UNWIND_A)
	$(CC) -shared -o $@ $(LIB_OBJ) $(LIB_LDFLAGS) -Wl,--version-script=$(LIB_MAP) \
	  -Wl,--exclude-libs,ALL -Wl,-z,nodelete -Wl,--wrap=pipe2 $(UNWIND_A) -ldl -lpthread
	@$(LIB_CHECK) $@

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj$(SAN:%=-san)/tools/%.o: tools/%.c
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -Iformat -c $< -o $@

$(TOOL_A): $(filter-out %/main.o,$(TOOL_OBJ))
	@rm -f $@
	ar rcs $@ $^

$(CLI): $(TOOL_OBJ) | deps
	$(CC) $(SANFLAGS) -o $@ $(TOOL_OBJ) $(TOOL_LIBS)
	@./scripts/check-cli-deps.sh $@

$(BUILD)/tests/%: tests/%.c $(LIB_A) $(TOOL_A)
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) $(SANFLAGS) -I$(UNWIND_DIR)/include -Iformat -Ilibinterpose -Itools -o $@ $< -Wl,--start-group $(TEST_LIBS) -Wl,--end-group

tests: all $(TEST_BIN) test-extras

# Parts hang their extra prerequisites of `make test` on test-extras (fakes, test programs).
.PHONY: test-extras
test-extras:

test: tests
	@./scripts/run-tests.sh $(BUILD) $(TEST_BIN)

clean:
	rm -rf $(BUILD)

include $(wildcard mk/*.mk)
-include $(wildcard $(BUILD)/obj*/*/*.d $(BUILD)/tests/*.d)
