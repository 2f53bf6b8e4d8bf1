# mk/names.mk: names that travel with traces (tools/names.c, pack.c): zlib, and the check that traces read the same without their binaries.

# names.c deflates its tables with zlib: inside the static libdw link already, else its own.
TOOL_LIBS += $(if $(LIBDW_A),,-lz)

# test_names traces the symbolizer's test objects (mk/stack.mk, read after this file).
$(BUILD)/tests/test_names: | $(BUILD)/tests/stack/libsymtest.so $(BUILD)/tests/stack/libsymtest-other.so

# `make bench-names`: names' size and time on a large synthetic trace (docs/names.md).
.PHONY: bench-names
bench-names: all fakes
	sh tests/bench/names_bench.sh $(BUILD)
