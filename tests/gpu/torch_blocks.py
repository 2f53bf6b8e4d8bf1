"""torch_blocks.py: PyTorch programs for tests/gpu/torch_blocks.sh, on one CUDA GPU with the caching allocator on.

Usage: torch_blocks.py MODE OUT.json [ARGS]
  counts   a 20-step loop of temporaries, a user thread allocating, record_stream on a
           side stream and one OOM; writes memory_stats()'s allocation counts, and
           memory_allocated()/memory_reserved(), with the CLOCK_MONOTONIC instant they
           were read at (the checker counts the trace's blocks up to it)
  leak     the issue's loop: 40 torch.cuda.nvtx "train_step" ranges of a small MLP's
           training step, each keeping kept.append(t.detach().clone().repeat(3, 1)) (3 MiB)
           inside keep_for_later; writes the line of that statement
  bench V  an allocation-bound loop from 20 nested Python frames: each step 64 tensors
           of 4 KiB .. 4 MiB made and dropped; V = plain | snapshot (the caller runs the
           traced variant under the library); writes ms per step (median) and block
           events per step
  gpt2 V   a GPT-2-sized transformers model's training step (bf16 autocast, AdamW),
           V as for bench; writes ms per step (median) and block events per step
"""
import json
import os
import sys
import threading
import time

import torch

mode, out = sys.argv[1], sys.argv[2]
dev = torch.device("cuda", 0)
MIB = 1 << 20


def write(d):
    with open(out, "w") as f:
        json.dump(d, f)


def stats_now():
    torch.cuda.synchronize()
    time.sleep(0.05)
    s = torch.cuda.memory_stats(dev)
    d = {"allocs": s["allocation.all.allocated"], "frees": s["allocation.all.freed"],
         "allocated": torch.cuda.memory_allocated(dev), "reserved": torch.cuda.memory_reserved(dev),
         "at_ns": time.monotonic_ns()}
    time.sleep(0.05)
    return d


def counts():
    side = torch.cuda.Stream()
    keep = []

    def user_thread():
        torch.cuda.set_device(dev)
        for i in range(50):
            x = torch.empty((i + 1) * 1000, device=dev)
            del x
        keep.append(torch.ones(1 << 18, device=dev))

    for step in range(20):
        a = torch.randn(512, 512, device=dev)
        b = a @ a
        with torch.cuda.stream(side):
            c = b * 2
        b.record_stream(side)
        del a, b, c
        if step == 10:
            th = threading.Thread(target=user_thread)
            th.start()
            th.join()
    try:
        torch.empty(1 << 46, dtype=torch.uint8, device=dev)  # 64 TiB: the allocator's OOM
    except RuntimeError:  # torch.cuda.OutOfMemoryError
        pass
    d = stats_now()
    d["ooms"] = torch.cuda.memory_stats(dev).get("num_ooms", -1)
    write(d)


def keep_for_later(kept, t):
    kept.append(t.detach().clone().repeat(3, 1))  # KEEP


def leak():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    x = torch.randn(256, 1024, device=dev)
    for step in range(40):
        torch.cuda.nvtx.range_push("train_step")
        opt.zero_grad()
        h = model(x)  # 256 x 1024 float32: 1 MiB; repeat(3, 1): 3 MiB kept
        loss = h.square().mean()
        loss.backward()
        opt.step()
        keep_for_later(kept, h)
        del h, loss
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if s.rstrip().endswith("# KEEP"))
    d = stats_now()
    d["keep_line"] = line
    write(d)


def bench(variant, steps):
    sizes = [4096 << (i % 11) for i in range(64)]  # 4 KiB .. 4 MiB

    def step():
        ts = [torch.empty(n, dtype=torch.uint8, device=dev) for n in sizes]
        del ts

    def timed():
        for _ in range(50):
            step()
        torch.cuda.synchronize()
        s0 = torch.cuda.memory_stats(dev)["allocation.all.allocated"]
        per = []
        for _ in range(steps):
            t0 = time.perf_counter_ns()
            step()
            per.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        s1 = torch.cuda.memory_stats(dev)["allocation.all.allocated"]
        per.sort()
        return per[len(per) // 2] / 1e6, 2 * (s1 - s0) / steps

    if variant == "snapshot":
        torch.cuda.memory._record_memory_history(stacks="all", max_entries=100000)
    # 20 Python frames: f1 .. f19, then timed()
    src = "".join("def f%d():\n    return f%d()\n" % (k, k + 1) for k in range(1, 19))
    src += "def f19():\n    return timed()\n"
    ns = {"timed": timed}
    exec(compile(src, "torch_blocks_nest.py", "exec"), ns)
    ms, events = ns["f1"]()
    if variant == "snapshot":
        torch.cuda.memory._record_memory_history(enabled=None)
    write({"variant": variant, "ms_per_step": ms, "events_per_step": events})


def gpt2(variant, steps):
    """A GPT-2-sized model (transformers' GPT2LMHeadModel, 124M parameters, bf16 autocast,
    AdamW), batch 8 x 512 tokens: median ms per training step and block events per step."""
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randint(0, 50257, (8, 512), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()

    for _ in range(5):
        step()
    if variant == "snapshot":
        torch.cuda.memory._record_memory_history(stacks="all", max_entries=1000000)
    s0 = torch.cuda.memory_stats(dev)["allocation.all.allocated"]
    per = []
    for _ in range(steps):
        t0 = time.perf_counter_ns()
        step()
        per.append(time.perf_counter_ns() - t0)
    s1 = torch.cuda.memory_stats(dev)["allocation.all.allocated"]
    if variant == "snapshot":
        torch.cuda.memory._record_memory_history(enabled=None)
    per.sort()
    write({"variant": variant, "ms_per_step": per[len(per) // 2] / 1e6,
           "events_per_step": 2 * (s1 - s0) / steps})


if mode == "counts":
    counts()
elif mode == "leak":
    leak()
elif mode == "bench":
    bench(sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 2000)
elif mode == "gpt2":
    gpt2(sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 30)
else:
    raise SystemExit("unknown mode " + mode)
