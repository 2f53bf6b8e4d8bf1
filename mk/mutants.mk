# mk/mutants.mk: the mutation harness (scripts/mutants.py, tests/mutants/*.mut; docs/testing.md).
#   make mutants                  plants each mutant in a copy of the tree ($(BUILD)/mutants/tree,
#                                 built once, then only what a mutant changes), runs the suites
#                                 that cover it, prints `N mutants, K killed` and the survivors
#   make mutants MUTANTS='writer-*'   only the mutants named (shell patterns)
#   make mutants-check            no build: every mutant's original text is still there exactly once

MUTANTS ?=

.PHONY: mutants mutants-check
mutants: | $(UNWIND_A)
	@python3 scripts/mutants.py run $(BUILD) $(MUTANTS)

mutants-check:
	@python3 scripts/mutants.py check $(MUTANTS)
