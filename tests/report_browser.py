#!/usr/bin/env python3
"""report_browser.py: loads a `gpumemtrace report` page in headless Chromium, offline:
no console message, the page's script ran to its end (it marks <body> with its chart
count), a screenshot shows the charts (pixels counted in the decoded PNG), and one opened at a
zoomed view (#t=FROM-TO) differs from it.

usage: report_browser.py REPORT.html SHOT.png CHARTS
exit 0 when it holds, 1 (with the reason) when not, 77 when no chromium is installed."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def fail(msg):
    print("report_browser: " + msg)
    sys.exit(1)


def chromium(args, profile):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
            # offline: any fetch at view time fails instead of going out
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=120)


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("%s is not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail("PNG of depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    page, shot, charts = os.path.abspath(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        print("report_browser: no chromium here")
        sys.exit(77)
    url = "file://" + page
    with tempfile.TemporaryDirectory() as profile:
        r = chromium(["--dump-dom", url], profile)
        console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
        if console:
            fail("console: " + console[0])
        m = re.search(r'data-gmt-charts="(\d+)"', r.stdout)
        if not m:
            fail("the page's script did not run to its end")
        if int(m.group(1)) != charts:
            fail("%s charts, not %d" % (m.group(1), charts))
        r = chromium(["--window-size=1200,900", "--screenshot=" + os.path.abspath(shot), url], profile)
        if r.returncode != 0 or not os.path.exists(shot):
            fail("no screenshot: " + r.stderr[-500:])
        # a zoomed view (#t=FROM-TO) draws differently from the whole
        zshot = os.path.splitext(os.path.abspath(shot))[0] + "-zoom.png"
        r = chromium(["--window-size=1200,900", "--screenshot=" + zshot, url + "#t=2.7-3.2"], profile)
        console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
        if console or not os.path.exists(zshot):
            fail("zoomed view: " + (console[0] if console else "no screenshot"))
    w, h, bpp, rows = png_pixels(shot)
    zw, zh, zbpp, zrows = png_pixels(zshot)
    changed = sum(1 for a, b in zip(rows, zrows) if a != b) if (zw, zh) == (w, h) else h
    if changed < h // 10:
        fail("the zoomed view looks like the whole: %d of %d rows differ" % (changed, h))
    ink = colour = 0
    for line in rows:
        for x in range(0, w * bpp, bpp):
            r_, g, b = line[x], line[x + 1], line[x + 2]
            if (r_, g, b) != (255, 255, 255):
                ink += 1
            if max(r_, g, b) - min(r_, g, b) > 60:
                colour += 1
    # text alone is grey; the charts' areas and lines are in colour
    if ink < w * h // 50 or colour < w * h // 200:
        fail("screenshot nearly blank: %d non-white, %d coloured pixels of %d" % (ink, colour, w * h))
    print("report_browser: %d charts, %d non-white and %d coloured pixels of %d, zoom changed %d rows" %
          (charts, ink, colour, w * h, changed))


main()
