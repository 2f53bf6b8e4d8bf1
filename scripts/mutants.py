#!/usr/bin/env python3
"""mutants.py: the mutation harness: plants each one-line bug of tests/mutants/*.mut, rebuilds, runs the suites that cover it.

Usage:
  mutants.py check [MUTANT...]        every mutant still applies: its file exists, its original
                                      text is there exactly once, its suites exist (no build)
  mutants.py run BUILD [MUTANT...]    the harness; BUILD is the build directory whose
                                      libunwind-pic seeds the mutation tree BUILD/mutants/tree
A MUTANT argument is a mutant's name (its file name without .mut) or a shell pattern (`writer-*`).
A mutant file is described in tests/mutants/README; docs/testing.md says how the run is built.
Exit status: 0 when every mutant applies and each survivor is marked as expected (`expect:`),
1 otherwise, 2 for bad usage.
"""
import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MUT_DIR = os.path.join(ROOT, "tests", "mutants")
KEYS = ("file", "breaks", "suites", "expect")


class MutantError(Exception):
    pass


class Mutant:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)[:-len(".mut")]
        self.fields = {}
        orig, repl = [], []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f.read().split("\n"), 1):
                if line.startswith("#") or not line.strip():
                    continue
                if line[0] in "-+":
                    # the marker, one space, then the text exactly ("+" alone: an empty line)
                    if len(line) > 1 and line[1] != " ":
                        raise MutantError(f"{self.name}: line {n}: '{line[0]}' must be followed by a space")
                    (orig if line[0] == "-" else repl).append(line[2:])
                    continue
                key, sep, val = line.partition(":")
                if not sep or key.strip() not in KEYS:
                    raise MutantError(f"{self.name}: line {n}: expected one of {', '.join(KEYS)}, '- ' or '+ '")
                self.fields[key.strip()] = val.strip()
        for k in ("file", "breaks", "suites"):
            if not self.fields.get(k):
                raise MutantError(f"{self.name}: no '{k}:' line")
        if not orig:
            raise MutantError(f"{self.name}: no original text ('- ' lines)")
        self.file = self.fields["file"]
        self.breaks = self.fields["breaks"]
        self.suites = self.fields["suites"].split()
        self.expect = self.fields.get("expect", "")
        # a change no output can show: out of the count the kill rate is taken over
        self.equivalent = self.expect.startswith("equivalent")
        self.orig = "\n".join(orig)
        self.repl = "\n".join(repl)
        if self.orig == self.repl:
            raise MutantError(f"{self.name}: the replacement is the original")

    def apply_to(self, text):
        """The mutated text, or MutantError when the original is not there exactly once."""
        n = text.count(self.orig)
        if n != 1:
            where = "no longer appears" if n == 0 else f"appears {n} times"
            raise MutantError(f"{self.name}: its original text {where} in {self.file} "
                              f"(re-target {os.path.relpath(self.path, ROOT)})")
        return text.replace(self.orig, self.repl)


def load(names):
    paths = sorted(os.path.join(MUT_DIR, f) for f in os.listdir(MUT_DIR) if f.endswith(".mut"))
    if names:
        keep = [p for p in paths if any(fnmatch.fnmatch(os.path.basename(p)[:-4], n) for n in names)]
        missing = [n for n in names if not any(fnmatch.fnmatch(os.path.basename(p)[:-4], n) for p in paths)]
        if missing:
            raise MutantError(f"no mutant named {', '.join(missing)} in tests/mutants/")
        paths = keep
    return [Mutant(p) for p in paths]


def suite_exists(root, s):
    if s.startswith("golden/"):
        return os.path.isfile(os.path.join(root, "tests", s + ".sh"))
    return os.path.isfile(os.path.join(root, "tests", s.split(":")[0] + ".c"))


def check(muts, root=ROOT):
    """Error lines for mutants that no longer apply to the tree at root."""
    errs = []
    for m in muts:
        p = os.path.join(root, m.file)
        if not os.path.isfile(p):
            errs.append(f"{m.name}: {m.file} does not exist")
            continue
        try:
            with open(p, encoding="utf-8") as f:
                m.apply_to(f.read())
        except MutantError as e:
            errs.append(str(e))
        errs += [f"{m.name}: no suite {s} (tests/{s}.c or tests/{s}.sh)" for s in m.suites if not suite_exists(root, s)]
    return errs


# ---- the mutation tree: a copy of the source with its own build directory
def source_files():
    out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT,
                         check=True, capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]


def same(a, b):
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


def sync_tree(tree, build):
    """Brings the tree's sources to the working tree's; unchanged files keep their times, so
    make rebuilds only what changed since the last run."""
    files = source_files()
    for f in files:
        src, dst = os.path.join(ROOT, f), os.path.join(tree, f)
        if not same(src, dst):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
            os.utime(dst)  # newer than whatever the tree built from the old text
    keep = set(files)
    for dirpath, dirnames, filenames in os.walk(tree):
        rel = os.path.relpath(dirpath, tree)
        if rel == "build" or rel.startswith("build" + os.sep):
            dirnames[:] = []
            continue
        for fn in filenames:
            r = os.path.normpath(os.path.join(rel, fn))
            if r not in keep:
                os.unlink(os.path.join(dirpath, fn))
    unw = os.path.join(tree, "build", "libunwind-pic")
    if not os.path.isdir(unw) and os.path.isdir(os.path.join(build, "libunwind-pic")):
        shutil.copytree(os.path.join(build, "libunwind-pic"), unw, symlinks=True)
        # built from the script it was built by: not older than the tree's copy of it
        for dirpath, _, filenames in os.walk(unw):
            for fn in filenames:
                p = os.path.join(dirpath, fn)
                if not os.path.islink(p):
                    os.utime(p)
        # The objects name no directory of their own build (the test programs and fakes
        # do: they are built again here). Times kept: an object older than its source,
        # copied with its time too, is compiled again.
        obj = os.path.join(build, "obj")
        if os.path.isdir(obj) and not os.path.isdir(os.path.join(tree, "build", "obj")):
            shutil.copytree(obj, os.path.join(tree, "build", "obj"), symlinks=True)


def make(tree, targets, jobs, log):
    cmd = ["make", f"-j{jobs}", "BUILD=build", *targets]
    with open(log, "w") as f:
        return subprocess.run(cmd, cwd=tree, stdout=f, stderr=subprocess.STDOUT).returncode


def build_targets(tree, suites):
    """What a run of these suites needs built after a change: the library, the CLI and the
    suites' binaries (golden checks use the CLI, two of them programs of their own)."""
    t = ["build/libgpumemtrace.so", "build/gpumemtrace"]
    for s in suites:
        if s == "golden/fuzz-regress":
            fz = os.path.join(tree, "build", "tests")
            t += sorted("build/tests/" + f for f in os.listdir(fz) if f.startswith("fuzz-replay-"))
        elif s == "golden/gen":
            t.append("build/tests/gen_golden")
        elif not s.startswith("golden/"):
            t.append("build/tests/" + s.split(":")[0])
    return list(dict.fromkeys(t))


def run_suite(tree, s, limit, log):
    """(status, seconds): status 0 passed, 1 failed, 124 ran past limit."""
    if s.startswith("golden/"):
        cmd = ["sh", f"tests/{s}.sh", "build"]
    else:
        name, _, pat = s.partition(":")
        cmd = [f"build/tests/{name}", "--jobs", "2", "--short-filename", "--fail-fast"]
        if pat:
            cmd.append(f"--filter={pat}")
    t0 = time.monotonic()
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, cwd=tree, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = 124
    return (0 if rc == 0 else 124 if rc == 124 else 1), time.monotonic() - t0


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.utime(path)


def run(build, names):
    t_start = time.monotonic()
    muts = load(names)
    errs = check(muts)
    if errs:
        print("\n".join(errs), file=sys.stderr)
        return 1
    jobs = int(os.environ.get("GMT_MUTANT_JOBS", "2"))
    build = os.path.abspath(build)
    tree = os.path.join(build, "mutants", "tree")
    logs = os.path.join(build, "mutants", "logs")
    os.makedirs(tree, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    sync_tree(tree, build)
    # the first run builds everything; later ones only what changed
    print("mutants: building the mutation tree", flush=True)
    if make(tree, ["tests"], jobs, os.path.join(logs, "build.log")):
        print(f"mutants: the unmutated tree does not build: {logs}/build.log", file=sys.stderr)
        return 1
    suites = list(dict.fromkeys(s for m in muts for s in m.suites))
    base = {}
    for s in suites:
        st, secs = run_suite(tree, s, 600, os.path.join(logs, "baseline-" + s.replace("/", "-") + ".log"))
        if st:
            print(f"mutants: {s} fails with no mutant planted (log: {logs}/baseline-{s.replace('/', '-')}.log)",
                  file=sys.stderr)
            return 1
        base[s] = secs
    print(f"mutants: {len(suites)} suites pass unmutated ({sum(base.values()):.0f} s); "
          f"{len(muts)} mutants", flush=True)

    originals = {}
    planted = None  # the file that holds a mutant now
    killed, survived, broken = [], [], []
    muts.sort(key=lambda m: (m.file, m.name))
    for i, m in enumerate(muts, 1):
        path = os.path.join(tree, m.file)
        if m.file not in originals:
            with open(path, encoding="utf-8") as f:
                originals[m.file] = f.read()
        if planted and planted != m.file:
            write(os.path.join(tree, planted), originals[planted])
        write(path, m.apply_to(originals[m.file]))
        planted = m.file
        t0 = time.monotonic()
        mlog = os.path.join(logs, m.name + ".log")
        if make(tree, build_targets(tree, m.suites), jobs, mlog):
            broken.append(m)
            print(f"[{i:3}/{len(muts)}] BUILD FAILS {m.name}: the mutant does not compile ({mlog})", flush=True)
            continue
        verdict = None
        for s in m.suites:
            # an infinite loop counts as killed: a suite runs at most a few times its own time
            limit = min(600, 30 + 5 * base[s])
            st, secs = run_suite(tree, s, limit, mlog + "." + s.replace("/", "-"))
            if st:
                verdict = f"{s}{' (timeout)' if st == 124 else ''}"
                break
        dt = time.monotonic() - t0
        if verdict:
            killed.append(m)
            note = "   (marked to survive: drop its expect line)" if m.expect else ""
            print(f"[{i:3}/{len(muts)}] killed   {m.name:40} by {verdict}, {dt:.0f} s{note}", flush=True)
        else:
            survived.append(m)
            print(f"[{i:3}/{len(muts)}] SURVIVED {m.name:40} {dt:.0f} s", flush=True)
    if planted:
        write(os.path.join(tree, planted), originals[planted])

    n = len(muts) - len(broken)
    k = len(killed)
    eq = sum(1 for m in survived if m.equivalent)
    print(f"{n} mutants, {k} killed ({100.0 * k / n if n else 0:.1f} %); "
          f"{eq} equivalent, {k} of {n - eq} killed ({100.0 * k / (n - eq) if n > eq else 0:.1f} %); "
          f"{(time.monotonic() - t_start) / 60:.1f} min")
    unexpected = [m for m in survived if not m.expect]
    for m in sorted(survived, key=lambda m: (not m.equivalent, m.name)):
        tag = f"expected: {m.expect}" if m.expect else "UNEXPECTED"
        print(f"  survivor {m.name}: {m.breaks} [{tag}]")
    for m in broken:
        print(f"  does not compile: {m.name} (fix tests/mutants/{m.name}.mut)")
    return 1 if unexpected or broken else 0


def main(argv):
    try:
        if len(argv) >= 1 and argv[0] == "check":
            muts = load(argv[1:])
            errs = check(muts)
            for e in errs:
                print("mutants-check: " + e, file=sys.stderr)
            if not errs:
                print(f"mutants-check: {len(muts)} mutants apply")
            return 1 if errs else 0
        if len(argv) >= 2 and argv[0] == "run":
            return run(argv[1], argv[2:])
    except MutantError as e:
        print("mutants: " + str(e), file=sys.stderr)
        return 1
    print(__doc__.split("\n\n")[0] + "\nusage: mutants.py check [MUTANT...] | run BUILD [MUTANT...]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
