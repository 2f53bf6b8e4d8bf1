"""train.py: a small PyTorch DDP job over NCCL: 256 MiB all_reduce/all_gather/reduce_scatter and a few training steps, with checksums and torch.cuda.mem_get_info around every collective."""
import argparse
import json
import os
import time

# Deterministic cuBLAS, so traced and untraced runs print the same losses.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
             ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(k, v)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def free_bytes(dev):
    torch.cuda.synchronize(dev)
    return torch.cuda.mem_get_info(dev)[0]


def checksum(t):
    # Values are small integers: the float64 sum is exact, whatever the reduction order.
    return float(t.double().sum().item())


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mib", type=int, default=256, help="tensor size per collective, MiB")
    ap.add_argument("--iters", type=int, default=3, help="rounds of the three collectives")
    ap.add_argument("--steps", type=int, default=5, help="training steps")
    ap.add_argument("--json", default="ddp_mem.rank%r.json",
                    help="per-rank output, %%r is replaced by the rank")
    args = ap.parse_args()

    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    torch.cuda.init()
    events = []

    def measure(name, step, fn):
        before = free_bytes(dev)
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize(dev)
        t1 = time.perf_counter()
        after = free_bytes(dev)
        events.append({"op": name, "step": step, "free_before": before, "free_after": after,
                       "delta_used": before - after, "seconds": t1 - t0})

    torch.zeros(1, device=dev)  # the context exists before we measure init
    measure("init_process_group", 0,
            lambda: dist.init_process_group("nccl", device_id=dev))
    print(f"INFO rank {rank} pid {os.getpid()} device {local} world {world}", flush=True)

    n = args.mib * (1 << 20) // 4
    base = (torch.arange(n, device=dev, dtype=torch.int64) % 97).to(torch.float32)
    for it in range(args.iters):
        x = base + rank + it
        measure("all_reduce", it, lambda: dist.all_reduce(x))
        print(f"CHECK rank {rank} iter {it} all_reduce {checksum(x):.1f}", flush=True)
        out = torch.empty(n * world, device=dev, dtype=torch.float32)
        measure("all_gather", it, lambda: dist.all_gather_into_tensor(out, x))
        print(f"CHECK rank {rank} iter {it} all_gather {checksum(out):.1f}", flush=True)
        rs = torch.empty(n // world, device=dev, dtype=torch.float32)
        measure("reduce_scatter", it, lambda: dist.reduce_scatter_tensor(rs, x))
        print(f"CHECK rank {rank} iter {it} reduce_scatter {checksum(rs):.1f}", flush=True)
        del out, rs, x
        torch.cuda.empty_cache()

    torch.manual_seed(1234)
    torch.use_deterministic_algorithms(True)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator(device="cpu").manual_seed(99 + rank)
    for step in range(args.steps):
        inp = torch.randn(64, 1024, generator=g).to(dev)
        loss = ddp(inp).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"CHECK rank {rank} step {step} loss {loss.item():.6f}", flush=True)
    w = sum(float(p.detach().double().abs().sum()) for p in model.parameters())
    print(f"CHECK rank {rank} weights {w:.6f}", flush=True)

    dist.barrier()
    dist.destroy_process_group()
    path = args.json.replace("%r", str(rank))
    with open(path, "w") as f:
        json.dump({"rank": rank, "pid": os.getpid(), "device": local, "events": events}, f,
                  indent=1)


if __name__ == "__main__":
    main()
