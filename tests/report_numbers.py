#!/usr/bin/env python3
"""report_numbers.py: the report page's byte formatter (its JavaScript bytes()) run on
the values of a file, each compared with what the CLI printed for it.

usage: report_numbers.py PAGE.html VALUES.tsv
VALUES.tsv holds one value per line: the bytes (a decimal integer, perhaps negative),
a TAB, the CLI's text for it. The function is taken from the page's source and run with
node, else in headless Chromium. Exit 0 when every text agrees, 1 (with the first ones
that differ) when not, 77 when neither node nor chromium is installed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("report_numbers: " + msg)
    sys.exit(1)


def function_source(page, name):
    """The text of `function NAME(...) { ... }` in page, by its braces."""
    m = re.search(r"function %s\(" % name, page)
    if not m:
        fail("the page has no function %s" % name)
    at = page.index("{", m.end())
    depth = 0
    for i in range(at, len(page)):
        depth += {"{": 1, "}": -1}.get(page[i], 0)
        if depth == 0:
            return page[m.start():i + 1]
    fail("function %s does not end" % name)


def run_node(script):
    exe = shutil.which("node") or shutil.which("nodejs")
    if not exe:
        return None
    r = subprocess.run([exe, "-"], input=script + "\nprocess.stdout.write(JSON.stringify(out));",
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        fail("node: " + r.stderr.strip()[-500:])
    return json.loads(r.stdout)


def run_chromium(script):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        return None
    with tempfile.TemporaryDirectory() as d:
        html = os.path.join(d, "n.html")
        with open(html, "w") as f:
            f.write("<!DOCTYPE html><html><body><pre id=out></pre><script>\n" + script +
                    "\ndocument.getElementById('out').textContent = JSON.stringify(out);"
                    "\n</script></body></html>")
        r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--user-data-dir=" + os.path.join(d, "profile"), "--dump-dom",
                            "file://" + html], capture_output=True, text=True, timeout=120)
    m = re.search(r"<pre id=\"out\">(.*?)</pre>", r.stdout, re.S)
    if not m:
        fail("chromium ran no script: " + r.stderr.strip()[-500:])
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    page = open(sys.argv[1], encoding="utf-8").read()
    rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
    if not rows or any(len(r) != 2 for r in rows):
        fail("%s: not VALUE<TAB>TEXT lines" % sys.argv[2])
    script = (function_source(page, "bytes") + "\nvar vals = " + json.dumps([r[0] for r in rows]) +
              ";\nvar out = vals.map(function (s) { return bytes(Number(s)); });")
    got = run_node(script)
    if got is None:
        got = run_chromium(script)
    if got is None:
        print("report_numbers: neither node nor chromium is installed")
        sys.exit(77)
    bad = [(r[0], r[1], g) for r, g in zip(rows, got) if r[1] != g]
    for v, want, g in bad[:10]:
        print("report_numbers: %s bytes: the CLI prints %r, the page %r" % (v, want, g))
    if bad:
        fail("%d of %d values print otherwise in the page" % (len(bad), len(rows)))
    print("report_numbers: %d values print alike" % len(rows))


if __name__ == "__main__":
    main()
