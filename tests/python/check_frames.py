#!/usr/bin/env python3
"""check_frames.py: runs frames_prog.py traced under every CPython 3.9-3.13 found, and checks the Python frames in the trace.

Usage: check_frames.py BUILD_DIR. Exit status 0 when every interpreter found passes;
interpreters that are missing are named and skipped (at least one must exist)."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "frames_prog.py")
PROG_BASE = os.path.basename(PROG)
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv") + "/versions"
PY_FRAME = re.compile(r"^(.+) \((\S+\.py):(\d+)\)$")


def markers():
    """Line numbers of the `# SITE name` markers in the program."""
    lines = {}
    with open(PROG) as f:
        for i, text in enumerate(f, 1):
            m = re.search(r"# SITE (\w+)$", text.rstrip())
            if m:
                lines[m.group(1)] = i
    return lines


def interpreters():
    found, missing = [], []
    for minor in range(9, 14):
        vers = sorted(d for d in os.listdir(PYENV) if d.startswith("3.%d." % minor)) \
            if os.path.isdir(PYENV) else []
        if vers:
            found.append(os.path.join(PYENV, vers[-1], "bin", "python3"))
        else:
            missing.append("3.%d (no %s/3.%d.*)" % (minor, PYENV, minor))
    # the distribution's, libpython linked into the executable
    for p in ("/usr/bin/python3.11", "/usr/bin/python3.12", "/usr/bin/python3"):
        if os.path.exists(p) and os.path.realpath(p) not in [os.path.realpath(x) for x in found]:
            found.append(p)
            break
    return found, missing


class Failure(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run(build, py, python_on):
    tmp = tempfile.mkdtemp(prefix="gmt-pyframes-")
    trace = os.path.join(tmp, "t.gmt")
    env = dict(os.environ)
    env.update({
        "LD_PRELOAD": os.path.join(build, "libgpumemtrace.so"),
        "GPUMEMTRACE_OUTPUT": trace,
        "GPUMEMTRACE_STACK_DEPTH": "256",
        "GPUMEMTRACE_PYTHON": "1" if python_on else "0",
        "FAKES_DIR": os.path.join(build, "fakes"),
        "PYHELPER": os.path.join(build, "tests", "python", "pyhelper.so"),
        "LD_LIBRARY_PATH": os.path.join(build, "fakes"),
        "FAKECUDA_DEVICES": "1",
    })
    env.pop("PYTHONPATH", None)
    p = subprocess.run([py, PROG], env=env, capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, "%s exited %d: %s" % (py, p.returncode, p.stderr[-2000:]))
    cli = os.path.join(build, "gpumemtrace")
    s = subprocess.run([cli, "summary", "--json", "--top", "100", trace], capture_output=True,
                       text=True, timeout=120)
    expect(s.returncode == 0, "summary failed: " + s.stderr)
    d = subprocess.run([cli, "dump", trace], capture_output=True, text=True, timeout=120)
    expect(d.returncode == 0, "dump failed: " + d.stderr)
    f = subprocess.run([cli, "export", "--format", "folded", trace], capture_output=True,
                       text=True, timeout=120)
    expect(f.returncode == 0, "export failed: " + f.stderr)
    text = subprocess.run([cli, "summary", trace], capture_output=True, text=True, timeout=120)
    expect(text.returncode == 0, "summary failed: " + text.stderr)
    # the fork child's own file: the other trace in the directory
    kids = [os.path.join(tmp, n) for n in os.listdir(tmp) if n != "t.gmt" and ".gmt" in n
            and not n.endswith(".names")]
    expect(len(kids) == 1, "fork child traces: %r" % (kids,))
    c = subprocess.run([cli, "summary", "--json", kids[0]], capture_output=True, text=True,
                       timeout=120)
    expect(c.returncode == 0, "summary of the fork child failed: " + c.stderr)
    child = json.loads(c.stdout)["traces"][0]
    return json.loads(s.stdout)["traces"][0], d.stdout, f.stdout, text.stdout, child


def py_frames(site):
    """(function, file, line) of the site's Python frames, innermost first."""
    out = []
    for fr in site["frames"]:
        m = PY_FRAME.match(fr)
        if m and m.group(2).endswith(".py"):
            out.append((m.group(1), m.group(2), int(m.group(3))))
    return out


def by_bytes(trace, n):
    sites = [s for s in trace["sites"] if s["bytes_total"] == n]
    expect(sites, "no site allocated %d bytes" % n)
    return sites[0]


def check_on(py, minor, trace, dump, folded, text, child, L):
    qual = minor >= 11
    alloc = ("alloc", PROG_BASE, L["alloc"])
    top = trace["sites"][0]
    # the top site (200 allocations from one line of run_all) names the user's line
    expect(top["frames"][top["site"]] == "alloc (%s:%d)" % (PROG_BASE, L["alloc"]),
           "top site is %r, not alloc at line %d" % (top["frames"][top["site"]], L["alloc"]))
    expect(py_frames(top)[:2] == [alloc, ("inner", PROG_BASE, L["inner"])],
           "top site's Python frames: %r" % (py_frames(top)[:3],))
    first_line = [l for l in text.splitlines() if " < " in l][0].strip()
    expect(first_line.startswith("alloc (%s:%d) < inner (%s:%d)" % (PROG_BASE, L["alloc"], PROG_BASE,
                                                                     L["inner"])),
           "text summary's first site: %r" % first_line)
    # nested calls, in order, with every line
    s = by_bytes(trace, 1001)
    want = [alloc, ("inner", PROG_BASE, L["inner"]), ("middle", PROG_BASE, L["middle"]),
            ("outer", PROG_BASE, L["outer"])]
    expect(py_frames(s)[:4] == want, "nested: %r" % (py_frames(s)[:4],))
    expect(py_frames(s)[-1][0] == "<module>", "outermost Python frame: %r" % (py_frames(s)[-1],))
    # a line 71 below the one before it (3.11+: a location entry's delta of two varint bytes)
    far = by_bytes(trace, 1008)
    expect(py_frames(far)[:2] == [alloc, ("far", PROG_BASE, L["far"])], "far: %r" % (py_frames(far)[:2],))
    # interleaved: each run of Python frames sits just inside an activation of the
    # evaluation loop (3.9/3.10: one frame each; 3.11+: all the frames it runs)
    fr = s["frames"]
    evals = 0
    for i, f in enumerate(fr):
        if PY_FRAME.match(f):
            # the next native frame is the loop's (after what is inlined into it)
            j = i + 1
            while j < len(fr) and PY_FRAME.match(fr[j]):
                j += 1
            k = j
            while k < len(fr) and k < j + 8 and "EvalFrameDefault" not in fr[k] \
                    and not PY_FRAME.match(fr[k]):
                k += 1
            expect(k < len(fr) and "EvalFrameDefault" in fr[k],
                   "Python frame %r not followed by the evaluation loop but %r" %
                   (f, fr[j] if j < len(fr) else None))
        if "_PyEval_EvalFrameDefault" in f:
            evals += 1
    if minor <= 10:
        expect(evals >= len(py_frames(s)), "3.9/3.10: one evaluation loop per Python frame")
    # qualified names from 3.11
    s = by_bytes(trace, 1002)
    expect(py_frames(s)[1] == ("Model.forward" if qual else "forward", PROG_BASE, L["forward"]),
           "method: %r" % (py_frames(s)[1],))
    s = by_bytes(trace, 1003)
    expect(py_frames(s)[1] == ("gen", PROG_BASE, L["gen"]), "generator: %r" % (py_frames(s)[1],))
    s = by_bytes(trace, 1004)
    names = [f[0] for f in py_frames(s)]
    expect(py_frames(s)[1:3] == [("leaf_coro", PROG_BASE, L["coro"]),
                                 ("main_coro", PROG_BASE, L["main_coro"])],
           "coroutines: %r" % (py_frames(s)[:4],))
    expect(any("run" in n for n in names[3:]), "asyncio's frames outside the coroutines: %r" % names)
    s = by_bytes(trace, 1005)
    pf = py_frames(s)
    expect(pf[1] == ("recurse", PROG_BASE, L["recurse"]), "recursion: %r" % (pf[:2],))
    expect(pf[2] == ("recurse", PROG_BASE, L["recurse_call"]), "recursion: %r" % (pf[:3],))
    # the STACK record keeps the innermost 128 Python frames (the JSON may show fewer)
    deep = [l for l in dump.splitlines() if " STACK " in l and
            re.search(r"py:\d+:%d\b" % L["recurse"], l)]
    expect(deep, "no STACK with the recursion's innermost frame")
    kept = max(len(re.findall(r"py:\d+:\d+", l)) for l in deep)
    expect(kept == 128, "recursion 500 deep: %d Python frames kept, not 128" % kept)
    # calls over three lines name the line they start on: a C call's (innermost) and a
    # Python call's
    s = by_bytes(trace, 1009)
    expect(py_frames(s)[:2] == [("alloc_over_lines", PROG_BASE, L["lines_c"]),
                                ("call_over_lines", PROG_BASE, L["lines_py"])],
           "calls over lines: %r" % (py_frames(s)[:2],))
    s = by_bytes(trace, 1006)
    expect(py_frames(s)[1] == ("in_thread", PROG_BASE, L["thread"]), "thread: %r" % (py_frames(s)[:2],))
    s = by_bytes(trace, 1007)
    expect(not py_frames(s), "a native thread has Python frames: %r" % (py_frames(s),))
    # a fork child names the frames its parent had read before the fork
    for t, who in ((trace, "parent"), (child, "fork child")):
        s = by_bytes(t, 1010)
        expect(py_frames(s)[1:2] == [("forked", PROG_BASE, L["forked"])],
               "%s: forked() named %r" % (who, py_frames(s)[1:2]))
    # code objects at reused addresses, each named as itself
    codes = set()
    for i in range(40):
        s = by_bytes(trace, 2000 + i)
        expect(py_frames(s)[1] == ("<module>", "gen_%d.py" % i, 2),
               "exec'd code %d named %r" % (i, py_frames(s)[1:2]))
    ids = re.findall(r'PYCODE +code=(\d+) .*file="gen_\d+\.py"', dump)
    expect(len(set(ids)) == 40, "%d PYCODE ids for the 40 exec'd codes" % len(set(ids)))
    # 6 threads capturing at once, 10 allocations each, from one line: one stack
    s = by_bytes(trace, 10 * sum(3000 + k for k in range(6)))
    expect(s["allocs"] == 60 and py_frames(s)[1] == ("worker", PROG_BASE, L["worker"]),
           "threads: %d allocs, %r" % (s["allocs"], py_frames(s)[1:2]))
    expect(re.search(r'PYCODE .*qualname="%s"' % ("Model.forward" if qual else "forward"), dump),
           "dump shows no PYCODE for the method")
    expect(re.search(r"ip=\[[^\]]*py:\d+:%d" % L["alloc"], dump), "dump shows no Python frame")
    # folded: outermost first, the interpreter's native frames left out
    line = [l for l in folded.splitlines() if "alloc (%s:%d)" % (PROG_BASE, L["alloc"]) in l]
    expect(line, "folded export has no Python frames")
    expect("_PyEval_EvalFrameDefault" not in line[0], "folded keeps the evaluation loop")
    expect(line[0].find("inner (") < line[0].find("alloc ("), "folded is not outermost first")


def check_off(trace, dump):
    for s in trace["sites"]:
        expect(not py_frames(s), "GPUMEMTRACE_PYTHON=0 and a Python frame: %r" % (py_frames(s),))
    expect("PYCODE" not in dump, "GPUMEMTRACE_PYTHON=0 and PYCODE records")
    # 3.11+ runs nested Python calls in one native activation: the native stacks of the
    # scenarios may all be alike, so their sites merge; they still have native frames
    expect(trace["sites"] and trace["sites"][0]["frames"], "GPUMEMTRACE_PYTHON=0: no frames")


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    L = markers()
    found, missing = interpreters()
    for m in missing:
        print("skipped: CPython %s" % m)
    if not found:
        print("no CPython 3.9-3.13 found")
        return 1
    bad = 0
    for py in found:
        v = subprocess.run([py, "-c", "import sys; print(sys.version_info[1])"],
                           capture_output=True, text=True)
        minor = int(v.stdout.strip())
        try:
            check_on(py, minor, *run(build, py, True), L)
            check_off(*run(build, py, False)[:2])
            print("ok: %s (3.%d)" % (py, minor))
        except Failure as e:
            print("FAIL: %s (3.%d): %s" % (py, minor, e))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
