#!/usr/bin/env bash
# torch_blocks.sh: real-GPU checks, on one NVIDIA GPU with PyTorch, of PyTorch's caching-allocator blocks in the trace: counts and totals against torch.cuda.memory_stats(), a planted leak named by its line with the cache on, expandable segments and cudaMallocAsync shown as they are, and the per-step cost of an allocation-bound loop and of a GPT-2-sized transformers step against the untraced runs and against _record_memory_history, interleaved in one run.
#
# Usage: bash tests/gpu/torch_blocks.sh   (from a copy of the tree with build/ carried; builds nothing)
# Needs build/libgpumemtrace.so, build/gpumemtrace and python3 with torch (CUDA). Writes
# $OUT/torch_blocks (or a temp dir): each run's output, traces, summaries (text and JSON);
# results.txt says what was checked. Prints a short table last. Exit 0 when every check passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
unset GPUMEMTRACE_BUILD
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING
w=${OUT:+$OUT/torch_blocks}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
py=$(command -v python3)
prog=$here/torch_blocks.py
failed=0
: >"$w/results.txt"
note() { printf '%s\n' "$*" | tee -a "$w/results.txt"; }
check() { # check WHAT COMMAND...: one line ok/FAIL
  local what=$1; shift
  if "$@" >>"$w/checks.log" 2>&1; then note "ok   $what"; else note "FAIL $what (see checks.log)"; failed=1; fi
}
cd "$w" || exit 2
note "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1); $("$py" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -n 1)"

traced() { # traced NAME [VAR=VALUE...] -- ARGS...: the program under `gpumemtrace run`, its summaries
  local n=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rm -rf "$n.traces"
  timeout 240 env "${envs[@]}" "$cli" run -q -o "$n.traces" -- "$py" "$prog" "$@" >"$n.out" 2>&1
  local rc=$?
  note "$n: exit $rc"
  "$cli" summary "$n.traces" >"$n.summary.txt" 2>&1
  "$cli" summary --json "$n.traces" >"$n.summary.json" 2>&1
  "$cli" dump "$n.traces"/*.gmt 2>/dev/null | grep ' BLOCK ' >"$n.blocks.txt"
  return $rc
}

# The trace's blocks up to the instant the program read memory_stats(), against it.
counts_check() { # NAME
  "$py" - "$1.json" "$1.blocks.txt" "$1.summary.json" <<'PYEOF'
import json, re, sys
want = json.load(open(sys.argv[1]))
allocs = frees = 0
last = None
for line in open(sys.argv[2]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    if int(f["time_ns"]) > want["at_ns"]:
        continue
    allocs += f["op"] == "ALLOC"
    frees += f["op"] == "FREE"
    last = f
got = {"allocs": allocs, "frees": frees, "allocated": int(last["allocated"]), "reserved": int(last["reserved"])}
print("memory_stats:", {k: want[k] for k in got}, "trace:", got)
p = json.load(open(sys.argv[3]))["traces"][0]["pytorch"]
print("summary mode", p["mode"], "devices", [(d["allocs"], d["frees"], d["ooms"]) for d in p["devices"]])
assert p["mode"] == "events", p["mode"]
assert all(got[k] == want[k] for k in got), "differ"
PYEOF
}

# ---- 1. counts and totals, native segments
traced counts -- counts counts.json
check "counts: ALLOC/FREE blocks = memory_stats allocation.all.allocated/freed; allocated, reserved = memory_allocated(), memory_reserved()" counts_check counts
check "counts: the OOM is recorded, with the request" "$py" -c "
import json; p = json.load(open('counts.summary.json'))['traces'][0]['pytorch']
o = p['ooms']; print(o[:1]); assert len(o) == 1 and o[0]['request_bytes'] >= 1 << 46"

# ---- 2. expandable segments: the same counts; reserved within the segments tracked
traced expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- counts expandable.json
check "expandable_segments:True: counts and totals as memory_stats" counts_check expandable
check "expandable_segments:True: reserved peak within the tracked (cuMemCreate/cuMemMap) peak" "$py" -c "
import json; t = json.load(open('expandable.summary.json'))['traces'][0]
r = t['pytorch']['devices'][0]['reserved_peak_bytes']; d = t['devices'][0]['peak_bytes']
print('reserved peak', r, 'tracked peak', d); assert 0 < r <= d"

# ---- 3. cudaMallocAsync: no blocks, and the summary says so; the CUDA calls are tracked
traced async PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- counts async.json
check "backend:cudaMallocAsync: mode named, no block recorded, allocations tracked" "$py" -c "
import json; t = json.load(open('async.summary.json'))['traces'][0]
print(t['pytorch']['mode'], t['pytorch']['note']); assert t['pytorch']['mode'] == 'cudaMallocAsync'
assert open('async.blocks.txt').read() == '' and t['devices'][0]['allocs'] > 0"
check "backend:cudaMallocAsync: the text says why" grep -q "backend:cudaMallocAsync: PyTorch reports no blocks" async.summary.txt

# ---- 4. the planted leak, with the cache on
traced leak -- leak leak.json
# a 3 MiB request that lands in a free block less than 1 MiB larger gets it whole (the
# allocator splits large blocks only above that): a step may keep a little more
check "leak: +3 MiB per step over 39 steps, from keep_for_later at its line" "$py" -c "
import json; want = json.load(open('leak.json'))
s = json.load(open('leak.summary.json'))['traces'][0]['pytorch']['steps']
site = 'keep_for_later (torch_blocks.py:%d)' % want['keep_line']; print(s)
assert s['count'] == 40 and s['grows_every_step']
assert 3 << 20 <= s['growth_per_step_bytes'] <= (3 << 20) + (1 << 19), s['growth_per_step_bytes']
assert s['line'].startswith(site), (s['line'], site)"
check "leak: the top block site at the allocated peak is keep_for_later's line" "$py" -c "
import json; want = json.load(open('leak.json'))
p = json.load(open('leak.summary.json'))['traces'][0]['pytorch']
site = 'keep_for_later (torch_blocks.py:%d)' % want['keep_line']
top = p['sites'][0]; print(top['line'], top['live_at_peak_bytes'])
assert top['line'].startswith(site) and top['live_at_peak_bytes'] >= 39 * (3 << 20)"

# ---- 5. cost per step: untraced, traced, _record_memory_history(stacks='all'), interleaved
reps=${TORCH_BLOCKS_REPS:-3}
interleaved() { # interleaved MODE OUT.txt: plain, traced and snapshot runs of MODE, in rotating order
  : >"$2"
  for r in $(seq 1 $reps); do
    order="plain traced snapshot"; [ $r = 2 ] && order="traced snapshot plain"; [ $r = 3 ] && order="snapshot plain traced"
    for v in $order; do
      case $v in
        plain|snapshot) timeout 300 "$py" "$prog" "$1" "b.$1.$v.$r.json" "$v" >/dev/null 2>>"$1.err" ;;
        traced) timeout 300 env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/$1.%p.gmt" "$py" "$prog" "$1" "b.$1.$v.$r.json" plain >/dev/null 2>>"$1.err"
                rm -f "$w/$1".*.gmt ;;
      esac
      "$py" -c "import json; d = json.load(open('b.$1.$v.$r.json')); print('$v', d['ms_per_step'], d['events_per_step'])" >>"$2" 2>>"$1.err"
    done
  done
}
medians() { "$py" - "$1" <<'PYEOF'
import sys, statistics
v = {}
for line in open(sys.argv[1]):
    k, ms, ev = line.split()
    v.setdefault(k, []).append(float(ms)); ev_ = float(ev)
m = {k: statistics.median(x) for k, x in v.items()}
print(m.get("plain", float("nan")), m.get("traced", float("nan")), m.get("snapshot", float("nan")), ev_)
PYEOF
}
interleaved bench bench.txt
read -r plain traced snap events <<<"$(medians bench.txt)"
if "$py" -c "import transformers" 2>/dev/null; then
  interleaved gpt2 gpt2.txt
  read -r g_plain g_traced g_snap g_events <<<"$(medians gpt2.txt)"
else
  g_plain=nan g_traced=nan g_snap=nan g_events="no transformers package"
fi
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f%%", (b - a) / a * 100 }'; }
per_event=$(awk -v a="$plain" -v b="$traced" -v e="$events" 'BEGIN { printf "%.2f", (b - a) * 1000 / e }')
check "cost: the traced loop within 3% of untraced per step" awk -v a="$plain" -v b="$traced" 'BEGIN { exit !((b - a) / a <= 0.03) }'
check "cost: at most 0.5 us per block event (20 Python frames)" awk -v x="$per_event" 'BEGIN { exit !(x <= 0.5) }'
[ "$g_plain" = nan ] ||
  check "cost: the traced GPT-2 step within 3% of untraced" awk -v a="$g_plain" -v b="$g_traced" 'BEGIN { exit !((b - a) / a <= 0.03) }'

echo
echo "== summary of the leaking loop (cache on), its PyTorch section:"
sed -n '/^PyTorch.s caching allocator/,/^Allocation failures/p' leak.summary.txt | head -n 30
echo
echo "== torch_blocks: PyTorch's caching allocator seen from inside (details in $w)"
printf '%-76s %s\n' "check" "result"
sed -n 's/^\(ok  \|FAIL\) \(.*\)$/\2|\1/p' "$w/results.txt" | awk -F'|' '{ printf "%-76.76s %s\n", $1, $2 }'
printf '%-76s %s\n' "allocation-bound loop, ms/step untraced (median of $reps)" "$plain"
printf '%-76s %s (%s)\n' "  traced, ms/step" "$traced" "$(pct "$plain" "$traced")"
printf '%-76s %s (%s)\n' "  _record_memory_history(stacks='all'), ms/step" "$snap" "$(pct "$plain" "$snap")"
printf '%-76s %s\n' "  block events per step; traced cost per event, us" "$events; $per_event"
printf '%-76s %s\n' "GPT-2-sized transformers step (bf16, AdamW, 8 x 512), ms/step untraced" "$g_plain"
[ "$g_plain" = nan ] || {
printf '%-76s %s (%s)\n' "  traced, ms/step" "$g_traced" "$(pct "$g_plain" "$g_traced")"
printf '%-76s %s (%s)\n' "  _record_memory_history(stacks='all'), ms/step" "$g_snap" "$(pct "$g_plain" "$g_snap")"; }
printf '%-76s %s\n' "  block events per step" "$g_events"
[ $failed = 0 ] && echo "all checks passed" || echo "SOME CHECKS FAILED"
exit $failed
