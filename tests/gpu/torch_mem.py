"""torch_mem.py: on a real GPU, a small single-GPU PyTorch training loop, eagerly or as a CUDA graph, with what PyTorch and the device say about memory at the end.

Usage: python3 torch_mem.py eager|graph STEPS
Prints one JSON line: the mode, the mean step time over the timed steps (ms), the
device's free and total memory (torch.cuda.mem_get_info), PyTorch's reserved and
allocated bytes and their high-water marks, and the last loss. With
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync a captured graph allocates through
stream-ordered allocations (graph memory nodes) instead of PyTorch's private pool.
"""
import json
import sys
import time

import torch


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "eager"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    torch.manual_seed(0)
    dev = "cuda"
    width = 2048
    model = torch.nn.Sequential(
        torch.nn.Linear(width, width), torch.nn.GELU(),
        torch.nn.Linear(width, width), torch.nn.GELU(),
        torch.nn.Linear(width, width)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(512, width, device=dev)
    y = torch.randn(512, width, device=dev)

    def train_step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if mode == "graph":
        # warm up on a side stream, then capture one step and replay it (PyTorch's recipe)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                train_step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = train_step()

        def run():
            graph.replay()
            return static_loss
    else:
        run = train_step

    for _ in range(5):
        run()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = run()
    torch.cuda.synchronize()
    step_ms = (time.perf_counter() - t0) * 1e3 / steps
    free, total = torch.cuda.mem_get_info()
    print(json.dumps({
        "mode": mode, "steps": steps, "step_ms": step_ms,
        "free": free, "total": total,
        "reserved": torch.cuda.memory_reserved(), "max_reserved": torch.cuda.max_memory_reserved(),
        "allocated": torch.cuda.memory_allocated(), "max_allocated": torch.cuda.max_memory_allocated(),
        "loss": float(loss.item()),
    }), flush=True)


if __name__ == "__main__":
    main()
