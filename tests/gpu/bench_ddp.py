"""bench_ddp.py: times PyTorch DDP training steps over NCCL (2 ranks, one per GPU); rank 0 prints the ranks' mean of their median step times in ms as `ddp_step_ms X`."""
import argparse
import os
import statistics
import time

for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
             ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(k, v)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--width", type=int, default=4096)
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"])
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(1234)
    # About 100 MiB of gradients: several DDP buckets, so each step makes several all_reduces.
    layers = []
    for _ in range(3):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    ddp = DDP(model, device_ids=[local])
    opt = torch.optim.SGD(ddp.parameters(), lr=0.001)
    inp = torch.randn(256, args.width, device=dev)
    times = []
    for i in range(args.warmup + args.steps):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        loss = ddp(inp).pow(2).mean()
        opt.zero_grad(set_to_none=False)
        loss.backward()
        opt.step()
        torch.cuda.synchronize(dev)
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(times)], device=dev, dtype=torch.float64)
    dist.all_reduce(med)  # the slower rank sets the pace of both: report their mean
    if rank == 0:
        print(f"ddp_step_ms {med.item() / dist.get_world_size() * 1e3:.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
