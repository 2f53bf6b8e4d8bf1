#!/usr/bin/env python3
"""report_check.py: checks a `gpumemtrace report` page: self-contained (nothing fetched),
its embedded JSON parses, and its numbers are `summary --json`'s.

usage: report_check.py REPORT.html SUMMARY.json [MAX_POINTS]
exit 0 when it holds, 1 (with the reason) when not."""
import json
import re
import sys


def fail(msg):
    print("report_check: " + msg)
    sys.exit(1)


def main():
    html_path, sum_path = sys.argv[1], sys.argv[2]
    max_points = int(sys.argv[3]) if len(sys.argv) > 3 else None
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
    if max_points is not None and most > max_points:
        fail("a track of %d points, more than %d" % (most, max_points))
    if len(data["traces"]) > 1:
        j, sj = data["job"], summary["job"]
        if j is None or j["peak"] != sj["peak"]:
            fail("job peaks %s, summary's %s" % (j and j["peak"], sj["peak"]))
    print("report_check: %d trace(s), %d device(s), most points: %d" % (len(data["traces"]), checked, most))


main()
