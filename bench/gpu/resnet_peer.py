#!/usr/bin/env python3
"""PyTorch's ResNet-50 training step, the peer of ember's resnet50_train --data synthetic.

The same work as ember's synthetic mode: fixed random images of 3x224x224 on the GPU, random
labels over 1000 classes, a forward pass, cross-entropy with label smoothing 0.1, a backward pass
and an SGD step (Nesterov momentum 0.9, weight decay 5e-5), with torch.autocast to bf16 and
channels_last, as NVIDIA's and MLPerf's PyTorch ResNet recipes run it. The model is
torchvision's resnet50 when torchvision is installed, else the same architecture defined
in bench/resnet_torch.py (ResNet-50 v1.5: the stride on the 3x3 convolution). Eager, then
torch.compile.

Prints one JSON object per mode: {"mode": "eager"|"compile", "batch": B, "images_per_s": ...}
and writes them all to --json.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from resnet_torch import resnet  # noqa: E402  (bench/resnet_torch.py)


def make_model():
    try:
        import torchvision
        return torchvision.models.resnet50(), "torchvision"
    except ImportError:
        return resnet("resnet50"), "bench/resnet_torch.py (no torchvision)"


def measure(mode, batch, steps, warmup):
    model, source = make_model()
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=5e-5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    if mode == "compile":
        step = torch.compile(step)
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    return {"mode": mode, "batch": batch, "steps": steps, "model": source,
            "images_per_s": batch * steps / seconds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    results = []
    for mode in ["eager"] + ([] if a.no_compile else ["compile"]):
        r = measure(mode, a.batch, a.steps, a.warmup)
        print(json.dumps(r), flush=True)
        results.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
