#!/usr/bin/env python3
"""report_check.py: checks a `gpumemtrace report` page: self-contained (nothing fetched),
its embedded JSON parses, and its numbers are `summary --json`'s.

usage: report_check.py REPORT.html SUMMARY.json [MAX_POINTS] [--explain EXPLAIN.json]
Checked against summary --json: device peaks, sites, each device's icicle (its bytes add
up to the device's peak, and a site's bytes over the devices to its bytes at the peak),
leaks, failures, each collective's first call, the NVTX occurrences, the job's spread and
its per-rank rows. With --explain, each trace's NCCL table is explain --json's object.
exit 0 when it holds, 1 (with the reason) when not."""
import json
import re
import sys


def fail(msg):
    print("report_check: " + msg)
    sys.exit(1)


def check_icicles(t):
    """Each device's icicle holds what was live at its peak: its sites and the rest add
    up to the peak; a site's bytes over the devices are its bytes at the peak."""
    per_stack = {}
    cut = False
    for d in t["devices"]:
        total = sum(x["bytes"] for x in d["flame"]) + d["flame_rest_bytes"]
        if total != d["peak_bytes"]:
            fail("%s GPU %d: icicle of %d bytes, peak %d" % (t["file"], d["device"], total, d["peak_bytes"]))
        for x in d["flame"]:
            if not x["frames"] or any(not 0 <= i < len(t["frames"]) for i in x["frames"]):
                fail("%s GPU %d: an icicle stack of no frame or a frame not in the table" % (t["file"], d["device"]))
            per_stack[x["stack"]] = per_stack.get(x["stack"], 0) + x["bytes"]
        cut = cut or d["flame_rest_bytes"] > 0
    for x in t["sites"]:
        got = sum(per_stack.get(k, 0) for k in x["stack_ids"])
        if got != x["live_at_peak_bytes"] and not (cut and got < x["live_at_peak_bytes"]):
            fail("%s: site %s has %d bytes in the icicles, %d at the peak" %
                 (t["file"], x["line"], got, x["live_at_peak_bytes"]))


def check_leaks(t, s):
    """summary's sites that are leaks (live at the end, held by nothing) come first among
    the page's leaks, by their bytes at the end, with the same bytes."""
    sl = [(x["live_at_end_bytes"], x["live_at_end_count"], x["stack"]) for x in s["sites"]
          if x["live_at_end_bytes"] and x["held_by"] is None]
    sl.sort(key=lambda x: -x[0])
    pl = [(x["live_at_end_bytes"], x["live_at_end_count"], x["stack"]) for x in t["leaks"]]
    if pl[:len(sl)] != sl:
        fail("%s: leaks %s, summary's %s" % (t["file"], pl[:3], sl[:3]))


def check_failures(t, s):
    sf = [(x["time_ns"], x["bytes"], x["api"], x["device"]) for x in s["failures"]]
    pf = [tuple(x[:2]) + (x[3], x[2]) for x in t["failures"]]
    if pf != sf[:1000] or t["failures_total"] != len(sf):
        fail("%s: failures %s, summary's %s" % (t["file"], pf[:3], sf[:3]))


def check_first_calls(t, s):
    sc = [(c["op"], c["comm_rank"], c["bytes_per_call"], c["calls"], c["first_tracked_bytes"])
          for c in s["collectives"]]
    pc = [(c["op"], c["comm_rank"], c["bytes_per_call"], c["calls"], c["first_tracked_bytes"])
          for c in t["first_calls"]]
    if pc != sc:
        fail("%s: first calls %s, summary's %s" % (t["file"], pc[:3], sc[:3]))


def check_phases(t, s):
    """Each NVTX range's occurrences on the lane (unmerged: every one is there)."""
    rows = s["phases"]["rows"]
    p = t["phases"]
    if not rows:
        if p is not None:
            fail("%s: an NVTX lane without ranges" % t["file"])
        return
    if p is None:
        fail("%s: no NVTX lane, summary has %d ranges" % (t["file"], len(rows)))
    want = sum(r["count"] + r["open_at_end"] for r in rows)
    if p["occurrences"] != want:
        fail("%s: %d NVTX occurrences, summary's %d" % (t["file"], p["occurrences"], want))
    if len(p["spans"]) == want:
        for r in rows:
            got = sum(1 for x in p["spans"] if x[2] == r["name"])
            if got != r["count"] + r["open_at_end"]:
                fail("%s: range %s %d times on the lane, summary's %d" %
                     (t["file"], r["name"], got, r["count"] + r["open_at_end"]))


def check_explain(t, explain):
    by_file = {x["file"]: x for x in explain["traces"]}
    e = by_file.get(t["file"])
    has = e is not None and e["communicators"]
    if bool(t["explain"]) != bool(has):
        fail("%s: NCCL table %s, explain's %s" % (t["file"], t["explain"] is not None, bool(has)))
    if has and t["explain"] != e:
        for k in e:
            if t["explain"].get(k) != e[k]:
                fail("%s: NCCL table's %s %s, explain's %s" % (t["file"], k, str(t["explain"].get(k))[:200],
                                                               str(e[k])[:200]))


def check_ranks(data, summary, by_file):
    """One row per rank; its peak, NCCL and untracked bytes are the sums over its devices
    of summary's, and their min, median and max the job's spread."""
    ranks = data.get("ranks") or []
    if len(ranks) != len(data["traces"]):
        fail("%d rank rows for %d traces" % (len(ranks), len(data["traces"])))
    for r in ranks:
        s = by_file[r["file"]]
        peak = sum(d["peak_bytes"] for d in s["devices"])
        nccl = sum(d["peak_by_category"].get("nccl", 0) for d in s["devices"])
        if (r["peak_bytes"], r["nccl_bytes"], r["failures"]) != (peak, nccl, len(s["failures"])):
            fail("rank %d: peak, NCCL, failures %s, summary's %s" %
                 (r["rank"], (r["peak_bytes"], r["nccl_bytes"], r["failures"]), (peak, nccl, len(s["failures"]))))
    sj = summary["job"]
    for key, col in (("peak", "peak_bytes"), ("nccl", "nccl_bytes"), ("untracked", "untracked_bytes")):
        vals = sorted((r[col], r["rank"]) for r in ranks if r[col] is not None)
        sp = sj[key]
        if not vals:
            continue
        got = {"min_bytes": vals[0][0], "median_bytes": vals[(len(vals) - 1) // 2][0], "max_bytes": vals[-1][0]}
        want = {k: sp[k] for k in got} if sp else None
        if got != want:
            fail("ranks' %s: %s, the job's %s" % (key, got, want))
        for end in ("min", "max"):
            if not any(r["rank"] == sp[end + "_rank"] and r[col] == sp[end + "_bytes"] for r in ranks):
                fail("ranks' %s: rank %s does not have the %s" % (key, sp[end + "_rank"], end))


def main():
    args = sys.argv[1:]
    explain = None
    if "--explain" in args:
        k = args.index("--explain")
        explain = json.load(open(args[k + 1]))
        del args[k:k + 2]
    html_path, sum_path = args[0], args[1]
    max_points = int(args[2]) if len(args) > 2 else None
    html = open(html_path, encoding="utf-8").read()
    # nothing fetched when the page is viewed
    for m in re.finditer(r'\b(src|href)\s*=\s*["\']?\s*([^"\'\s>]*)', html, re.I):
        if re.match(r'(https?:)?//', m.group(2), re.I):
            fail("fetches %s" % m.group(2))
    if re.search(r'<script[^>]*\bsrc\s*=', html, re.I):
        fail("an external script")
    if re.search(r'<link\b', html, re.I) or re.search(r'@import|url\(\s*["\']?(https?:)?//', html, re.I):
        fail("an external style sheet or resource")
    blocks = re.findall(r'<script type="application/json" id="gmt-data">(.*?)</script>', html, re.S)
    if len(blocks) != 1:
        fail("%d data blocks, not 1" % len(blocks))
    data = json.loads(blocks[0])
    summary = json.load(open(sum_path))
    if data.get("schema") != "gpumemtrace.report/1":
        fail("schema %r" % data.get("schema"))
    by_file = {t["file"]: t for t in summary["traces"]}
    if sorted(by_file) != sorted(t["file"] for t in data["traces"]):
        fail("traces %s, summary's %s" % ([t["file"] for t in data["traces"]], sorted(by_file)))
    if len(data["start_ns"]) != len(data["traces"]):
        fail("a start per trace")
    checked = 0
    most = 0
    for t in data["traces"]:
        s = by_file[t["file"]]
        peaks = [(d["device"], d["peak_bytes"]) for d in t["devices"]]
        speaks = [(d["device"], d["peak_bytes"]) for d in s["devices"]]
        if peaks != speaks:
            fail("%s: peaks %s, summary's %s" % (t["file"], peaks, speaks))
        for d in t["devices"]:
            tracked = d["tracked"]
            vals = tracked[1::2]
            # the peak survives the downsampling: the highest tracked point is it
            if d["peak_bytes"] and max(vals or [0]) != d["peak_bytes"]:
                fail("%s GPU %d: highest tracked point %d, peak %d" %
                     (t["file"], d["device"], max(vals or [0]), d["peak_bytes"]))
            times = tracked[0::2]
            if times != sorted(times) or (times and times[-1] > t["span_ns"]):
                fail("%s GPU %d: tracked points out of order or past the end" % (t["file"], d["device"]))
            for series in [tracked, d["used"]] + [c["points"] for c in d["categories"]]:
                most = max(most, len(series) // 2)
            checked += 1
        sites = [(x["live_at_peak_bytes"], x["stack"]) for x in t["sites"]]
        ssites = [(x["live_at_peak_bytes"], x["stack"]) for x in s["sites"]]
        if sites != ssites:
            fail("%s: sites %s, summary's %s" % (t["file"], sites[:3], ssites[:3]))
        check_icicles(t)
        check_leaks(t, s)
        check_failures(t, s)
        check_first_calls(t, s)
        check_phases(t, s)
        if explain is not None:
            check_explain(t, explain)
    if max_points is not None and most > max_points:
        fail("a track of %d points, more than %d" % (most, max_points))
    if len(data["traces"]) > 1:
        j, sj = data["job"], summary["job"]
        if j is None or j["peak"] != sj["peak"]:
            fail("job peaks %s, summary's %s" % (j and j["peak"], sj["peak"]))
        check_ranks(data, summary, by_file)
    print("report_check: %d trace(s), %d device(s), most points: %d%s" %
          (len(data["traces"]), checked, most, ", explain checked" if explain is not None else ""))


main()
