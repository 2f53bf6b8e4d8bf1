#!/usr/bin/env python3
"""check-layers.py: the objects of one part (the preload library, the CLI) call each other one way only.

Usage: check-layers.py [--allow A:B ...] OBJ_DIR[=SRC_DIR]...

For each directory, the link graph of its .o files: A -> B when A uses a symbol that B
defines (nm: an undefined symbol of A that B defines as code or data). The part is
layered when that graph has no cycle: every file can be given a floor with each call
going down. A cycle is printed as its files and the symbols that tie them, and the
status is 1. With SRC_DIR only the objects of its .c files are read (a build folder
keeps the object of a source that is gone). --allow A:B leaves out the one edge A -> B (both named by their object's
stem): a call up that the caller has a reason for, stated beside it. An allowed edge
that is not there is an error too, so the list cannot outlive its reason.
"""
import collections
import glob
import os
import subprocess
import sys

DEFINED = set("TDBRVC")


def link_graph(obj_dir, src_dir=None):
    defs, uses = {}, collections.defaultdict(set)
    objs = sorted(glob.glob(os.path.join(obj_dir, "*.o")))
    if src_dir:
        objs = [o for o in objs if os.path.exists(os.path.join(src_dir, os.path.basename(o)[:-2] + ".c"))]
    if not objs:
        sys.exit(f"check-layers: no objects in {obj_dir}")
    for o in objs:
        stem = os.path.basename(o)[:-2]
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in DEFINED:
                defs.setdefault(f[2], stem)
            elif len(f) == 2 and f[0] == "U":
                uses[stem].add(f[1])
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for a, syms in uses.items():
        for s in syms:
            b = defs.get(s)
            if b and b != a:
                edges[a][b].add(s)
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    nodes = set(edges) | {b for a in edges for b in edges[a]}
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = n
                n += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(edges.get(w, {})))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def main(argv):
    allowed, dirs = set(), []
    it = iter(argv)
    for a in it:
        if a == "--allow":
            pair = next(it, "")
            if pair.count(":") != 1:
                sys.exit("check-layers: --allow takes A:B")
            allowed.add(tuple(pair.split(":")))
        else:
            dirs.append(a)
    if not dirs:
        sys.exit(__doc__.strip().splitlines()[2])
    bad = 0
    seen = set()
    for arg in dirs:
        d, _, src = arg.partition("=")
        edges = link_graph(d, src or None)
        for a, b in allowed:
            if b in edges.get(a, {}):
                seen.add((a, b))
                del edges[a][b]
        for comp in cycles(edges):
            bad += 1
            print(f"{d}: a cycle of {len(comp)} files: {' '.join(comp)}")
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print(f"  {a} -> {b}: {' '.join(sorted(edges[a][b])[:6])}")
    for a, b in sorted(allowed - seen):
        bad += 1
        print(f"allowed {a} -> {b} is not in the graph any more: drop it")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
