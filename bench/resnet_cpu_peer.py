#!/usr/bin/env python3
"""PyTorch on the CPU doing bench_resnet_cpu's training steps (same models, sizes and step:
forward, cross-entropy with label smoothing 0.1, backward, SGD with Nesterov momentum), in float.
Prints images/s per case and writes them to --json, named as bench_resnet_cpu's benchmarks
(the _nhwc cases with the model and input in torch.channels_last). --compile adds each case
under torch.compile (Inductor's C++ backend on the CPU) as <name>/compile; --bf16 runs them under
torch.autocast(cpu, bf16), named <name>_bf16 like bench_resnet_cpu's bf16 cases.

  python3 bench/resnet_cpu_peer.py --json bench/results/cpu-resnet-torch.json
  python3 bench/resnet_cpu_peer.py --filter resnet18w16 --compile
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resnet_torch import resnet  # noqa: E402

CASES = [("resnet_step/resnet18w16_28px", dict(arch="resnet18", num_classes=10, in_channels=1,
                                               width=16, small_stem=True), 28, [32, 128]),
         ("resnet_step/resnet18_28px", dict(arch="resnet18", num_classes=10, in_channels=1,
                                            width=64, small_stem=True), 28, [32]),
         ("resnet_step/resnet50_64px", dict(arch="resnet50"), 64, [8, 32]),
         ("resnet_step/resnet18_48px", dict(arch="resnet18", num_classes=10, width=64,
                                            small_stem=True), 48, [32]),
         ("resnet_step/resnet50_128px", dict(arch="resnet50"), 128, [8]),
         ("resnet_step/resnet50_224px", dict(arch="resnet50"), 224, [4])]


def images_per_s(kwargs, side, batch, seconds, channels_last=False, compile=False, bf16=False):
    torch.manual_seed(1)
    model = resnet(**kwargs)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                          weight_decay=5e-5)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
    x = torch.randn(batch, kwargs.get("in_channels", 3), side, side).contiguous(memory_format=fmt)
    y = torch.randint(0, kwargs.get("num_classes", 1000), (batch,))
    forward = torch.compile(model) if compile else model

    def step():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # warm-up (and, compiled, the compilation)
    step()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 2:
        step()
        n += 1
    return batch * n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", default="")
    ap.add_argument("--filter", default="", help="only the cases whose name contains this")
    ap.add_argument("--compile", action="store_true", help="also under torch.compile")
    ap.add_argument("--bf16", action="store_true",
                    help="under torch.autocast(cpu, bf16) instead, the cases named <name>_bf16")
    a = ap.parse_args()
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "results": {}}
    for name, kwargs, side, batches in CASES:
        for b in batches:
            for nhwc in (False, True):
                for compiled in (False, True) if a.compile else (False,):
                    case = (f"{name}{'_nhwc' if nhwc else ''}{'_bf16' if a.bf16 else ''}/{b}"
                            f"{'/compile' if compiled else ''}")
                    if a.filter not in case:
                        continue
                    ips = images_per_s(kwargs, side, b, a.seconds, nhwc, compiled, a.bf16)
                    out["results"][case] = ips
                    print(f"{case}: {ips:.1f} images/s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
