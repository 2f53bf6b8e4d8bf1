#!/usr/bin/env python3
"""export_check.py: checks what `gpumemtrace export` wrote against the trace-event format and
against `summary --json` of the same traces (tests/test_export.c runs it).

  export_check.py chrome OUT.json SUMMARY.json MAX_POINTS
  export_check.py sqlite JOB.db SUMMARY.json [QUERIES.sql]
  export_check.py csv DIR SUMMARY.json
  export_check.py inert DIR -        (no CSV cell there runs as a spreadsheet formula)

Exits 1 with one line per problem found; prints what it compared."""
import collections
import csv
import json
import os
import re
import sqlite3
import sys

problems = []
FAILS = {}  # trace index -> failed allocations, from the summary


def bad(msg):
    problems.append(msg)


def traces_of(summary_path):
    with open(summary_path) as f:
        d = json.load(f)
    return d["traces"] if "traces" in d else [d]


def expected(traces):
    """(trace index, device) -> peak, allocs; trace index -> top-level NCCL calls."""
    peaks, allocs, calls = {}, {}, {}
    for i, t in enumerate(traces):
        FAILS[i] = len(t["failures"])
        for d in t["devices"]:
            peaks[(i, d["device"])] = d["peak_bytes"]
            allocs[(i, d["device"])] = d["allocs"]
        calls[i] = sum(c["calls"] for c in t["collectives"])
    return peaks, allocs, calls


def live_peaks(allocs):
    """Peak of device memory live per (trace, device) from allocation rows
    (trace, device, time, freed_at, bytes, id): allocations in time order, frees before
    allocations at the same nanosecond."""
    ev = collections.defaultdict(list)
    for tr, dev, t, freed, b, aid in allocs:
        ev[(tr, dev)].append((t, 1, aid, b))
        if freed is not None:
            ev[(tr, dev)].append((freed, 0, aid, -b))
    out = {}
    for k, lst in ev.items():
        lst.sort()
        live = peak = 0
        for _, _, _, b in lst:
            live += b
            peak = max(peak, live)
        out[k] = peak
    return out


def summary_ops(traces):
    """trace index -> the names of its collective rows (the summary's COLLECTIVE op)."""
    return {i: {c["op"] for c in t["collectives"]} for i, t in enumerate(traces)}


def summary_means(traces):
    """op -> (host ns, calls it stands for) over the job, as the summary's rows add them."""
    out = collections.defaultdict(lambda: [0, 0])
    for t in traces:
        for c in t["collectives"]:
            out[c["op"]][0] += c["host_ns_total"]
            out[c["op"]][1] += c["host_calls"]
    return {op: v for op, v in out.items() if v[1]}


def check_calls(name, rows, traces):
    """rows: (trace, counted_as, scope, op, begin, end, duration, timed, weight) of every
    call. A call has a duration exactly when it was timed; a timed one's weight is at
    least 1 and an untimed one's 0; the outermost calls go by the summary's names."""
    ops = collections.defaultdict(set)
    for tr, counted, scope, op, begin, end, dur, timed, weight in rows:
        if timed not in (0, 1):
            bad(f"{name}: trace {tr} call {scope}: timed {timed!r}")
        elif timed and (begin is None or end is None or dur != end - begin or weight < 1):
            bad(f"{name}: trace {tr} call {scope}: timed, but begin {begin} end {end} duration {dur} weight {weight}")
        elif not timed and (dur is not None or weight != 0 or (begin is not None and end is not None)):
            bad(f"{name}: trace {tr} call {scope}: untimed, but begin {begin} end {end} duration {dur} weight {weight}")
        if counted == scope:
            ops[tr].add(op)
    for i, want in summary_ops(traces).items():
        if ops.get(i, set()) != want:
            bad(f"{name}: trace {i}: calls named {sorted(ops.get(i, set()))}, the summary's rows {sorted(want)}")


def compare_tables(name, peaks_got, allocs_got, calls_got, traces, fails_got):
    peaks, allocs, calls = expected(traces)
    for i, v in FAILS.items():
        if fails_got.get(i, 0) != v:
            bad(f"{name}: trace {i}: {fails_got.get(i, 0)} failures, summary says {v}")
    for k, v in peaks.items():
        if peaks_got.get(k, 0) != v:
            bad(f"{name}: trace {k[0]} device {k[1]}: peak {peaks_got.get(k, 0)}, summary says {v}")
        if allocs_got.get(k, 0) != allocs[k]:
            bad(f"{name}: trace {k[0]} device {k[1]}: {allocs_got.get(k, 0)} allocations, summary says {allocs[k]}")
    for i, v in calls.items():
        if calls_got.get(i, 0) != v:
            bad(f"{name}: trace {i}: {calls_got.get(i, 0)} outermost NCCL calls, summary says {v}")
    print(f"{name}: {len(peaks)} device peaks, allocation counts, {len(calls)} traces' NCCL calls "
          f"and {sum(FAILS.values())} failures compared")


REQUIRED = {"X": ("name", "ts", "dur", "pid", "tid"), "C": ("name", "ts", "pid", "args"),
            "i": ("name", "ts", "pid", "tid", "s"), "M": ("name", "pid", "args"),
            "s": ("name", "ts", "pid", "tid", "id"), "f": ("name", "ts", "pid", "tid", "id", "bp")}
META = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}


def check_chrome(path, summary, max_points):
    with open(path) as f:
        doc = json.load(f)
    evs = doc.get("traceEvents")
    if not isinstance(evs, list) or not evs:
        bad("chrome: no traceEvents array")
        return
    last = {}
    points = collections.Counter()
    cmax = {}
    names = collections.defaultdict(set)
    flows = collections.Counter()
    xcount = collections.Counter()
    cnames = collections.defaultdict(set)
    fails = collections.Counter()
    for n, e in enumerate(evs):
        ph = e.get("ph")
        if ph not in REQUIRED:
            bad(f"chrome: event {n}: phase {ph!r} not one this export writes")
            continue
        for k in REQUIRED[ph]:
            if k not in e:
                bad(f"chrome: event {n} ({ph}): no {k}")
        if ph != "M" and not (isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0):
            bad(f"chrome: event {n}: ts {e.get('ts')!r}")
        if ph == "M":
            if e["name"] not in META or not isinstance(e["args"], dict) or not e["args"]:
                bad(f"chrome: event {n}: metadata {e['name']!r} {e.get('args')!r}")
            if e["name"] in ("process_name", "thread_name"):
                names[e["name"]].add((e["pid"], e.get("tid")))
                if not isinstance(e["args"].get("name"), str) or not e["args"]["name"]:
                    bad(f"chrome: event {n}: empty name")
            continue
        if ph == "i" and e["name"] == "allocation failed":
            fails[e["pid"]] += 1
        if e.get("cat") == "nccl" and ph in "Xi":
            # an NCCL call: a slice when timed (or still open), an instant when not
            timed = e.get("args", {}).get("timed")
            if timed is not (ph == "X" and not e["args"].get("open_at_end")):
                bad(f"chrome: event {n}: NCCL call {e['name']!r} as {ph!r} with timed {timed!r}")
            w = e["args"].get("weight")
            if not isinstance(w, int) or (w < 1 if timed else w != 0):
                bad(f"chrome: event {n}: NCCL call {e['name']!r}: weight {e['args'].get('weight')!r}")
            xcount[e["pid"]] += 1
            cnames[e["pid"]].add(e["name"])
        if ph == "X":
            if not isinstance(e["dur"], (int, float)) or e["dur"] < 0:
                bad(f"chrome: event {n}: dur {e['dur']!r}")
        if ph == "C":
            track = (e["pid"], e["name"])
            points[track] += 1
            vals = list(e["args"].values())
            if not vals or not all(isinstance(v, (int, float)) for v in vals):
                bad(f"chrome: event {n}: counter args {e['args']!r}")
            else:
                cmax[track] = max(cmax.get(track, 0), max(vals))
        else:
            track = (e["pid"], e["tid"], ph)
        if ph in "sf":
            flows[(e["id"], ph)] += 1
        if track in last and e["ts"] < last[track]:
            bad(f"chrome: event {n}: track {track}: ts {e['ts']} before {last[track]}")
        last[track] = e["ts"]
    for (fid, ph), c in flows.items():
        if c != 1 or flows.get((fid, "f" if ph == "s" else "s")) != 1:
            bad(f"chrome: flow {fid}: not one start and one end")
    for track, c in points.items():
        if c > max_points:
            bad(f"chrome: counter {track}: {c} points, more than {max_points}")
    traces = traces_of(summary)
    pids = sorted({p for p, _ in names["process_name"]})
    if len(pids) != len(traces):
        bad(f"chrome: {len(pids)} named processes for {len(traces)} traces")
    peaks, _, calls = expected(traces)
    for (i, dev), v in peaks.items():
        if i >= len(pids):
            break
        got = cmax.get((pids[i], f"GPU {dev} tracked bytes"), 0)
        if got != v:
            bad(f"chrome: process {pids[i]} GPU {dev}: highest counter point {got}, summary peak {v}")
    for i, v in FAILS.items():
        if i < len(pids) and fails[pids[i]] != v:
            bad(f"chrome: process {pids[i]}: {fails[pids[i]]} failure events, summary says {v}")
    for i, v in calls.items():
        if i < len(pids) and xcount[pids[i]] < v:
            bad(f"chrome: process {pids[i]}: {xcount[pids[i]]} NCCL calls, fewer than its {v} calls")
    for i, want in summary_ops(traces).items():
        if i < len(pids) and not want <= cnames[pids[i]]:
            bad(f"chrome: process {pids[i]}: calls named {sorted(cnames[pids[i]])}, the summary's rows {sorted(want)}")
    print(f"chrome: {len(evs)} events, {len(points)} counter tracks (most points: "
          f"{max(points.values()) if points else 0}), {len(peaks)} peaks compared")


def check_sqlite(path, summary, queries):
    db = sqlite3.connect(path)
    traces = traces_of(summary)
    got = db.execute("SELECT host, pid FROM traces ORDER BY trace").fetchall()
    if got != [(t["host"], t["pid"]) for t in traces]:
        bad(f"sqlite: traces {got}, summary has {[(t['host'], t['pid']) for t in traces]}")
    rows = db.execute("SELECT trace, device, time_ns, freed_at_ns, bytes, id FROM allocations "
                      "WHERE memory = 'device'").fetchall()
    peaks = live_peaks(rows)
    allocs = dict(((t, d), c) for t, d, c in
                  db.execute("SELECT trace, device, count(*) FROM allocations GROUP BY trace, device"))
    calls = dict(db.execute("SELECT trace, count(*) FROM nccl_calls WHERE counted_as = scope GROUP BY trace"))
    fails = dict(db.execute("SELECT trace, count(*) FROM failures GROUP BY trace"))
    compare_tables("sqlite", peaks, allocs, calls, traces, fails)
    check_calls("sqlite", db.execute("SELECT trace, counted_as, scope, op, begin_ns, end_ns, duration_ns, "
                                     "timed, weight FROM nccl_calls").fetchall(), traces)
    for t in ("traces", "allocations", "nccl_calls", "sites", "device_samples", "failures"):
        idx = db.execute("SELECT count(*) FROM sqlite_master WHERE type='index' AND tbl_name=?", (t,)).fetchone()[0]
        if not idx:
            bad(f"sqlite: table {t} has no index")
    if queries:
        # the queries of docs/export.md: each ```sql block, its first line "-- name"; all
        # must answer, and the peak query as the summary does
        with open(queries) as f:
            text = f.read()
        blocks = [b.split("\n```", 1)[0] for b in text.split("```sql\n")[1:]]
        if len(blocks) < 3:
            bad(f"sqlite: {queries} has {len(blocks)} queries")
        for block in blocks:
            name, _, sql = block.partition("\n")
            name = name.removeprefix("-- ")
            got = db.execute(sql).fetchall()
            print(f"query {name!r}: {got[:4]}")
            if not got:
                bad(f"sqlite: query {name!r} returned nothing")
            if name.startswith("mean host time"):
                want = summary_means(traces)
                means = {r[0]: r[1] for r in got}
                if set(means) != set(want) or any(abs(means[op] - ns / n) > 1e-6 * max(1, ns / n)
                                                  for op, (ns, n) in want.items()):
                    bad(f"sqlite: query {name!r}: {means}, summary {({op: ns / n for op, (ns, n) in want.items()})}")
            if name.startswith("peak per rank"):
                want = {}
                for t in traces:
                    want[t["rank"]] = max([d["peak_bytes"] for d in t["devices"]] or [0])
                if {r: p for r, p in got} != want:
                    bad(f"sqlite: query {name!r}: {got}, summary peaks {want}")


def check_csv(d, summary):
    tables = {}
    for t in ("traces", "allocations", "nccl_calls", "sites", "device_samples", "failures"):
        with open(os.path.join(d, t + ".csv"), newline="") as f:
            r = list(csv.reader(f, strict=True))
        if not r:
            bad(f"csv: {t}.csv has no header")
            continue
        width = len(r[0])
        for k, row in enumerate(r[1:]):
            if len(row) != width:
                bad(f"csv: {t}.csv row {k + 1}: {len(row)} fields, header has {width}")
        tables[t] = [dict(zip(r[0], row)) for row in r[1:]]

    def num(s):
        return int(s) if s != "" else None
    rows = [(num(a["trace"]), num(a["device"]), num(a["time_ns"]), num(a["freed_at_ns"]),
             num(a["bytes"]), num(a["id"])) for a in tables["allocations"] if a["memory"] == "device"]
    peaks = live_peaks(rows)
    allocs = collections.Counter((num(a["trace"]), num(a["device"])) for a in tables["allocations"])
    calls = collections.Counter(num(c["trace"]) for c in tables["nccl_calls"] if c["counted_as"] == c["scope"])
    traces = traces_of(summary)
    if len(tables["traces"]) != len(traces):
        bad(f"csv: {len(tables['traces'])} traces, summary has {len(traces)}")
    for row, t in zip(tables["traces"], traces):
        if (row["host"], num(row["pid"])) != (t["host"], t["pid"]):
            bad(f"csv: trace {row['trace']}: host {row['host']!r} pid {row['pid']}, summary says {t['host']!r} {t['pid']}")
    fails = collections.Counter(num(f["trace"]) for f in tables["failures"])
    compare_tables("csv", peaks, allocs, calls, traces, fails)
    check_calls("csv", [(num(c["trace"]), num(c["counted_as"]), num(c["scope"]), c["op"], num(c["begin_ns"]),
                         num(c["end_ns"]), num(c["duration_ns"]), num(c["timed"]), num(c["weight"]))
                        for c in tables["nccl_calls"]], traces)


NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def check_inert(d):
    """No cell of a CSV file in d starts as a formula (=, +, -, @, TAB, CR) unless it is a
    number; the cells made inert (a quote in front) are printed."""
    inert = []
    for name in sorted(os.listdir(d)):
        if not name.endswith(".csv"):
            continue
        with open(os.path.join(d, name), newline="") as f:
            for k, row in enumerate(csv.reader(f, strict=True)):
                for cell in row:
                    if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not NUMBER.fullmatch(cell):
                        bad(f"inert: {name} row {k}: a cell a spreadsheet runs: {cell[:40]!r}")
                    elif cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r"):
                        inert.append(cell)
    print(f"inert: {len(inert)} cells made inert: {inert[:8]}")


def main():
    mode, out, summary = sys.argv[1:4]
    if mode == "chrome":
        check_chrome(out, summary, int(sys.argv[4]))
    elif mode == "sqlite":
        check_sqlite(out, summary, sys.argv[4] if len(sys.argv) > 4 else None)
    elif mode == "csv":
        check_csv(out, summary)
    elif mode == "inert":
        check_inert(out)
    else:
        sys.exit(f"unknown mode {mode}")
    for p in problems[:40]:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
