# mk/install.mk: `make install PREFIX=... DESTDIR=...` and `make uninstall` (scripts/install.sh does the work).
# bin/gpumemtrace, lib/gpumemtrace/libgpumemtrace.so (where `run` finds it from the CLI),
# include/gpumemtrace.h, share/man/man1/gpumemtrace*.1, bash and zsh completion.

PREFIX  ?= /usr/local
DESTDIR ?=

.PHONY: install uninstall
install: all
	@./scripts/install.sh install $(BUILD) "$(DESTDIR)" "$(PREFIX)"

uninstall:
	@./scripts/install.sh uninstall $(BUILD) "$(DESTDIR)" "$(PREFIX)"
