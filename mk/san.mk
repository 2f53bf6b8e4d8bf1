# mk/san.mk: SAN=1 builds the preload library too with ASan and UBSan: the in-process suites link its sanitized objects, and every suite that preloads $(LIB_SO) into a program runs the sanitized library there.
#
# Two files get UBSan only: hooks_dl.c and resolve.c hold the library's dlsym, which
# ASan's own start-up calls (its interceptors look up the real functions with
# dlsym(RTLD_NEXT)) before ASan has mapped its shadow memory; instrumented, that first
# call faults. The .so carries tests/san/preload_options.c (the runtimes' defaults: it
# says why each) and exports those two names beside exports.map's; it needs libasan and
# libubsan, so check-lib-deps.sh does not run on it. It also needs $(LIB_SAN_TLS), after
# the ASan runtime (tests/san/tls_static_info.c says why). An error the runtimes report
# in a traced program ends it with status 86 and the report on its stderr.
ifneq ($(SAN),)
LIB_SAN_ONLY_UBSAN := $(BUILD)/obj/libinterpose/hooks_dl.o $(BUILD)/obj/libinterpose/resolve.o
$(filter-out $(LIB_SAN_ONLY_UBSAN),$(LIB_OBJ)): private LIB_CFLAGS += $(SANFLAGS)
$(LIB_SAN_ONLY_UBSAN): private LIB_CFLAGS += -fsanitize=undefined -fno-sanitize-recover=all

LIB_SAN_OPTS := $(BUILD)/obj/san/preload_options.o
LIB_SAN_TLS  := $(BUILD)/san/libgmt-san-tls.so
LIB_MAP      := $(BUILD)/exports-san.map
LIB_LDFLAGS   = $(SANFLAGS) $(LIB_SAN_OPTS) -Wl,--no-as-needed -L$(abspath $(dir $(LIB_SAN_TLS))) \
                -Wl,-rpath,$(abspath $(dir $(LIB_SAN_TLS))) -l:libgmt-san-tls.so
LIB_CHECK    := true

$(LIB_SAN_TLS): tests/san/tls_static_info.c
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) -shared -fPIC -Wl,-soname,libgmt-san-tls.so -o $@ $< -ldl

$(LIB_SAN_OPTS): tests/san/preload_options.c
	@mkdir -p $(@D)
	$(CC) $(ALLCFLAGS) -fPIC -c $< -o $@

$(LIB_MAP): libinterpose/exports.map
	@mkdir -p $(@D)
	sed 's/^\( *global:\)/\1\n    __asan_default_options; __ubsan_default_options;/' $< > $@

$(LIB_SO): $(LIB_SAN_OPTS) $(LIB_SAN_TLS) $(LIB_MAP)
endif
