"""train_loop.py: on a real GPU, a small transformer trained with PyTorch, its phases marked with torch.cuda.nvtx ranges, for the stacks and phases checks of user_code.sh.

Usage: python3 train_loop.py STEPS [grow]
Each step runs inside the NVTX range "train_step", its parts inside "forward",
"backward" and "optimizer". With `grow`, every step keeps one more 4 MiB tensor (a
leak a user would make), so phases and step growth can be checked. Prints one JSON
line: the source lines of the model's build, of the forward pass and of the kept
tensor (the sites should name them), and the last loss.
"""
import inspect
import json
import sys

import torch


def build_model(width):
    layer = torch.nn.TransformerEncoderLayer(d_model=width, nhead=8, dim_feedforward=4 * width,
                                             batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=4).to("cuda")  # LINE:build


def forward(model, x):
    return model(x).float().pow(2).mean()  # LINE:forward


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    grow = len(sys.argv) > 2 and sys.argv[2] == "grow"
    torch.manual_seed(0)
    model = build_model(256)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 128, 256, device="cuda")
    kept = []
    loss = None
    for _ in range(steps):
        with torch.cuda.nvtx.range("train_step"):
            with torch.cuda.nvtx.range("forward"):
                loss = forward(model, x)
            with torch.cuda.nvtx.range("backward"):
                loss.backward()
            with torch.cuda.nvtx.range("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            if grow:
                kept.append(torch.empty(1 << 20, device="cuda"))  # LINE:grow
    torch.cuda.synchronize()
    src = inspect.getsource(sys.modules[__name__]).splitlines()
    lines = {tag: i + 1 for i, l in enumerate(src) for tag in ("build", "forward", "grow")
             if l.rstrip().endswith("# LINE:" + tag)}
    print(json.dumps({"file": __file__, "lines": lines, "loss": float(loss)}))


if __name__ == "__main__":
    main()
