#!/usr/bin/env python3
"""report_layout.py: what a `gpumemtrace report` page drew, as layout facts read in
headless Chromium (Selenium and chromedriver, offline), not pixels. Each chart's canvas
says what it drew where (data-layout: tick labels, NCCL labels, the untracked label),
each icicle its top bar and first row (data-top, data-row1). It checks:

- the byte axis: ticks from 0 in one unit, evenly spaced by 1, 2 or 5 times a power of ten;
- the time axis: the same, in one unit;
- every NCCL label inside the plot and over no other (nothing cut at the edge);
- the gap between tracked and device used named in the legend (and, with --untracked,
  written in the chart);
- no icicle's first row is a process's start code (_start, __libc_start_main, libc+0x..);
- with --sections N, that N traces are drawn (ranks alike drawn once), and with
  --alike TEXT that a section's title names its group (TEXT, e.g. "ranks 0-1").

usage: report_layout.py REPORT.html [--sections N] [--alike TEXT] [--untracked] [--shot PNG]
exit 0 when it holds, 1 (with the reason) when not, 77 without chromium, chromedriver
or the selenium package."""
import json
import math
import os
import re
import sys

import headless


def fail(msg):
    print("report_layout: " + msg)
    sys.exit(1)


def skip(msg):
    print("report_layout: " + msg)
    sys.exit(77)


try:
    from selenium import webdriver
    from selenium.webdriver.common.by import By
except ImportError:
    skip("no selenium package here")

START = re.compile(r"^(_start|__libc_start_main|__libc_start_call_main|start_thread|clone3?)\b|^libc\.so(\.[0-9]+)?\+0x")


def browser():
    return headless.chrome("report_layout", logs=False)


def round_step(step):
    """True when step is 1, 2 or 5 times a power of ten."""
    if step <= 0:
        return False
    p = 10 ** math.floor(math.log10(step) + 1e-9)
    return any(abs(step - m * p) <= 1e-6 * step for m in (1, 2, 5, 10))


def axis(labels, what, from_zero):
    if len(labels) < 2:
        fail("%s: %d tick label(s): %r" % (what, len(labels), labels))
    vals, units = [], set()
    for t in labels:
        m = re.match(r"^(-?[0-9]+(?:\.[0-9]+)?) (\S+)$", t)
        if not m:
            fail("%s: tick label %r is not NUMBER UNIT" % (what, t))
        vals.append(float(m.group(1)))
        units.add(m.group(2))
    if len(units) != 1:
        fail("%s: ticks in several units: %r" % (what, labels))
    steps = [b - a for a, b in zip(vals, vals[1:])]
    if any(abs(s - steps[0]) > 1e-6 * max(abs(steps[0]), 1e-9) for s in steps):
        fail("%s: ticks not evenly spaced: %r" % (what, labels))
    if not round_step(steps[0]):
        fail("%s: step %g is not 1, 2 or 5 times a power of ten: %r" % (what, steps[0], labels))
    if from_zero and vals[0] != 0:
        fail("%s: does not start at 0: %r" % (what, labels))
    if any(abs(v / steps[0] - round(v / steps[0])) > 1e-6 for v in vals):
        fail("%s: ticks not on multiples of their step: %r" % (what, labels))


def main():
    args = sys.argv[1:]
    if not args:
        fail("usage: report_layout.py REPORT.html [--sections N] [--alike TEXT] [--untracked] [--shot PNG]")
    page, sections, alike, untracked, shot = os.path.abspath(args[0]), None, None, False, None
    i = 1
    while i < len(args):
        if args[i] == "--sections":
            sections, i = int(args[i + 1]), i + 2
        elif args[i] == "--alike":
            alike, i = args[i + 1], i + 2
        elif args[i] == "--untracked":
            untracked, i = True, i + 1
        elif args[i] == "--shot":
            shot, i = args[i + 1], i + 2
        else:
            fail("unknown argument " + args[i])
    d = browser()
    try:
        d.get("file://" + page)
        if not d.find_element(By.TAG_NAME, "body").get_attribute("data-gmt-drawn"):
            fail("the page's script did not run to its end")
        if shot:
            d.set_window_size(1200, d.execute_script("return document.body.scrollHeight") + 120)
            d.save_screenshot(shot)
        secs = d.find_elements(By.CSS_SELECTOR, "section.trace")
        if sections is not None and len(secs) != sections:
            fail("%d trace section(s) drawn, not %d" % (len(secs), sections))
        if alike is not None and not any(alike in s.find_element(By.TAG_NAME, "h2").text for s in secs):
            fail("no section's title names its group %r: %r" %
                 (alike, [s.find_element(By.TAG_NAME, "h2").text for s in secs]))
        charts = d.find_elements(By.CSS_SELECTOR, ".chart canvas")
        if not charts:
            fail("no chart")
        for k, cv in enumerate(charts):
            lay = json.loads(cv.get_attribute("data-layout") or "null")
            if not lay:
                fail("chart %d says nothing of its layout" % k)
            left, right = (float(x) for x in cv.get_attribute("data-plot").split(","))
            axis([t[0] for t in lay["yticks"]], "chart %d bytes" % k, True)
            axis([t[0] for t in lay["xticks"]], "chart %d time" % k, False)
            boxes = sorted((a, b, t) for t, a, b in lay["labels"])
            for a, b, t in boxes:
                if a < left - 0.5 or b > right + 0.5:
                    fail("chart %d: label %r at %.1f-%.1f is outside the plot %.1f-%.1f" % (k, t, a, b, left, right))
            for (a0, b0, t0), (a1, b1, t1) in zip(boxes, boxes[1:]):
                if a1 < b0 - 0.5:
                    fail("chart %d: labels %r and %r overlap" % (k, t0, t1))
            if untracked and not lay.get("untracked"):
                fail("chart %d: the untracked gap is not labelled" % k)
        legends = [l.text for l in d.find_elements(By.CSS_SELECTOR, ".legend")]
        for l in legends:
            if "device used" in l and "untracked" not in l:
                fail("a legend with device used does not name untracked: %r" % l)
        for ic in d.find_elements(By.CSS_SELECTOR, ".icicle canvas"):
            row1 = json.loads(ic.get_attribute("data-row1") or "[]")
            bad = [n for n in row1 if START.search(n)]
            if bad:
                fail("an icicle's first row is start code: %r" % bad)
        print("report_layout: %d section(s), %d chart(s): round ticks in one unit, labels inside, untracked named"
              % (len(secs), len(charts)))
    finally:
        d.quit()


main()
