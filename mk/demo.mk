# mk/demo.mk: `make demo`: a 2-rank training loop on the simulated GPU, traced, then summarised (V=1: the build's commands too).

DEMO_PROG := $(BUILD)/examples/train_sim
DEMO_DIR  := $(BUILD)/demo

# FAKE_LIBS comes from mk/fakes.mk, which may be read after this file.
.SECONDEXPANSION:
$(DEMO_PROG): examples/simulated/train_sim.c $$(FAKE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $< $(FAKE_LDFLAGS) -lcudart -lnccl

# The build runs in a make of its own, silent unless V=1: what the demo shows is its
# answer, not the compiler's command lines.
.PHONY: demo
demo:
	@$(MAKE) --no-print-directory $(if $(V),,-s) all $(DEMO_PROG)
	@rm -rf $(DEMO_DIR)
	@echo "== gpumemtrace run -o $(DEMO_DIR) -- train_sim 4   (2 ranks on the simulated CUDA/NCCL)"
	@$(BUILD)/gpumemtrace run -o $(DEMO_DIR) -- $(DEMO_PROG) 4
	@echo
	@echo "== gpumemtrace summary $(DEMO_DIR)"
	@$(BUILD)/gpumemtrace summary --top 5 $(DEMO_DIR)
# tests/golden/fast-unwind.sh traces the demo's program.
test-extras: $(DEMO_PROG)
