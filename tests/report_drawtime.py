#!/usr/bin/env python3
"""report_drawtime.py: how long a `gpumemtrace report` page takes to draw in headless
Chromium: from navigation to the page marking itself drawn (<body data-gmt-drawn="MS">,
performance.now() when its script has drawn every chart and icicle), offline. Loads it
RUNS times (a fresh profile each) and prints the median, in seconds, then the runs.

usage: report_drawtime.py REPORT.html [RUNS]
exit 0, 1 when the page did not mark itself drawn, 77 when no chromium is installed."""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def main():
    page = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("report_drawtime: no chromium here")
        sys.exit(77)
    ms = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                "--user-data-dir=" + profile, "--window-size=1200,900",
                                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
                                "--dump-dom", "file://" + page], capture_output=True, text=True, timeout=300)
        m = re.search(r'data-gmt-drawn="([0-9.]+)"', r.stdout)
        if not m:
            print("report_drawtime: the page did not mark itself drawn")
            sys.exit(1)
        ms.append(float(m.group(1)))
    s = sorted(ms)
    print("%.3f %s" % (s[(len(s) - 1) // 2] / 1000, " ".join("%.1f" % x for x in ms)))


main()
