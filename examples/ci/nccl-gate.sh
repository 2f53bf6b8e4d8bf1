#!/bin/sh
# nccl-gate.sh: runs a training job under gpumemtrace and fails when NCCL's memory grew beyond the baseline.
#
# Usage: nccl-gate.sh [--update] -- COMMAND [ARGS...]
#   Runs COMMAND under `gpumemtrace run -o $GMT_TRACES`, then
#   `gpumemtrace check $GMT_TRACES --baseline $GMT_BASELINE --junit $GMT_JUNIT`.
#   --update writes the baseline from this run instead (commit it after review).
# Environment (all optional):
#   GPUMEMTRACE   the CLI (default: gpumemtrace on the PATH)
#   GMT_BASELINE  the baseline file (default: nccl-baseline.json)
#   GMT_TRACES    where the traces go (default: gpumemtrace-traces, emptied first)
#   GMT_JUNIT     JUnit report (default: report.xml)
#   GMT_CHECK_ARGS extra check options, e.g. "--max-growth peak=10% --category nccl"
# Exit status: the job's when it failed; else check's (0 within limits, 1 grew, 2 error).
set -u
gmt=${GPUMEMTRACE:-gpumemtrace}
baseline=${GMT_BASELINE:-nccl-baseline.json}
traces=${GMT_TRACES:-gpumemtrace-traces}
junit=${GMT_JUNIT:-report.xml}
update=0
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1; shift ;;
    --) shift; break ;;
    *) echo "nccl-gate.sh: unknown option '$1' (usage: nccl-gate.sh [--update] -- COMMAND...)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "nccl-gate.sh: no command given (usage: nccl-gate.sh [--update] -- COMMAND...)" >&2; exit 2; }

rm -rf "$traces"
"$gmt" run -q -o "$traces" -- "$@"
rc=$?
if [ "$rc" != 0 ]; then
  echo "nccl-gate.sh: the job failed (exit $rc); not checking its memory" >&2
  exit "$rc"
fi

if [ "$update" = 1 ]; then
  # shellcheck disable=SC2086 # GMT_CHECK_ARGS is a list of options
  exec "$gmt" check "$traces" --write-baseline "$baseline" ${GMT_CHECK_ARGS:-}
fi
if [ ! -f "$baseline" ]; then
  echo "nccl-gate.sh: no baseline $baseline: write one with 'nccl-gate.sh --update -- COMMAND...'," >&2
  echo "  review it and commit it" >&2
  exit 2
fi
# shellcheck disable=SC2086
exec "$gmt" check "$traces" --baseline "$baseline" --junit "$junit" ${GMT_CHECK_ARGS:-}
