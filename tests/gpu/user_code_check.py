"""user_code_check.py: checks, for user_code.sh, that a traced PyTorch loop's summary names train_loop.py's lines and its torch.cuda.nvtx phases.

Usage: python3 user_code_check.py [--grow] TRACED_OUTPUT SUMMARY_JSON
TRACED_OUTPUT is train_loop.py's output under the library (its last line: the JSON with
the file's tagged line numbers); SUMMARY_JSON is `gpumemtrace summary --json` of the
run. Prints what it found; exit status 0 when every check holds, 1 otherwise.
"""
import json
import sys


def site_frame(s):
    frames = s.get("frames") or []
    i = s.get("site", 0)
    return frames[i] if isinstance(i, int) and 0 <= i < len(frames) else ""


def main(argv):
    grow = argv and argv[0] == "--grow"
    if grow:
        argv = argv[1:]
    prog = json.loads(open(argv[0]).read().strip().splitlines()[-1])
    doc = json.load(open(argv[1]))
    traces = sorted(doc["traces"], key=lambda t: -len(t.get("sites", [])))
    t = traces[0]
    lines = prog["lines"]
    ok = True
    tops = [site_frame(s) for s in t["sites"][:10]]
    print("top sites:", *tops, sep="\n  ")
    py_sites = [f for f in tops if "train_loop.py:" in f]
    if not tops or "train_loop.py:" not in tops[0]:
        print("FAIL: the top site is not a line of train_loop.py")
        ok = False
    want = {lines["build"], lines["forward"]} | ({lines["grow"]} if grow else set())
    named = {int(f.rsplit(":", 1)[1].rstrip(")")) for f in py_sites}
    print("train_loop.py lines named by the top sites:", sorted(named), "tagged:", lines)
    if not (named & want):
        print("FAIL: no top site names the model's build, the forward pass or the kept tensor")
        ok = False
    ph = t.get("phases") or {}
    names = {r["name"] for r in ph.get("rows", [])}
    print("phases:", sorted(names))
    for n in ("train_step", "forward", "backward", "optimizer"):
        if n not in names:
            print("FAIL: no phase", n)
            ok = False
    steps = ph.get("steps") or {}
    print("steps:", steps)
    if grow:
        if not steps.get("grows_every_step"):
            print("FAIL: the kept tensor does not show as growth every step")
            ok = False
        elif steps.get("growth_per_step_bytes") != 4 << 20:
            print("FAIL: growth per step", steps.get("growth_per_step_bytes"), "not 4 MiB")
            ok = False
    elif steps.get("grows_every_step"):
        print("FAIL: a loop that keeps nothing is flagged as growing every step")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
