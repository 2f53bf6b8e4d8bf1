"""gpu_torch.py: on a real GPU, PyTorch allocating from known lines of a user's file, for tests/python/check_torch.py.

Usage: python3 gpu_torch.py STEPS. Prints the mean step time (ms) of the timed steps.
The lines that allocate carry `# SITE <name>` markers, which the checker looks up."""
import sys
import time

import torch


class Net(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin1 = torch.nn.Linear(width, width, device="cuda")
        self.lin2 = torch.nn.Linear(width, width, device="cuda")

    def forward(self, x):
        h = self.lin1(x)  # SITE forward
        return self.lin2(torch.relu(h))


def big_buffer():
    return torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # SITE big_buffer


def train(steps):
    net = Net(2048)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    x = torch.randn(1024, 2048, device="cuda")
    keep = big_buffer()  # SITE keep
    times = []
    for i in range(steps):
        t0 = time.perf_counter()
        loss = net(x).square().mean()  # SITE step
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    del keep
    timed = times[steps // 5:]
    return 1e3 * sum(timed) / len(timed)


if __name__ == "__main__":
    print("%.4f" % train(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
