#!/usr/bin/env python3
"""PyTorch on the CPU doing bench_resnet_cpu's training steps (same models, sizes and step:
forward, cross-entropy with label smoothing 0.1, backward, SGD with Nesterov momentum), in float.
Prints images/s per case and writes them to --json, named as bench_resnet_cpu's benchmarks
(the _nhwc cases with the model and input in torch.channels_last). --compile adds each case
under torch.compile (Inductor's C++ backend on the CPU) as <name>/compile; --bf16 runs them under
torch.autocast(cpu, bf16), named <name>_bf16 like bench_resnet_cpu's bf16 cases. --libtorch PATH
adds each case (3-channel models) in libtorch's C++ frontend as <name>/libtorch, run by PATH (the
bench/libtorch_peer program: the same model written with torch::nn, the same step, autocast in C++).

  python3 bench/resnet_cpu_peer.py --json bench/results/cpu-resnet-torch.json
  python3 bench/resnet_cpu_peer.py --filter resnet18w16 --compile
"""
import argparse
import json
import os
import subprocess
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


def libtorch_images_per_s(program, kwargs, side, batch, seconds, channels_last, bf16):
    args = [program, "resnet", kwargs["arch"], str(kwargs.get("width", 64)),
            str(int(kwargs.get("small_stem", False))), str(side), str(batch),
            str(int(channels_last)), str(int(bf16)), str(seconds)]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    expected = sum(p.numel() for p in resnet(**kwargs).parameters())
    if r["parameters"] != expected:
        sys.exit(f"libtorch_peer's {kwargs['arch']} has {r['parameters']} parameters, "
                 f"resnet_torch.py's {expected}: not the same model")
    return r["images_per_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", default="")
    ap.add_argument("--filter", default="", help="only the cases whose name contains this")
    ap.add_argument("--compile", action="store_true", help="also under torch.compile")
    ap.add_argument("--libtorch", default="", help="the bench/libtorch_peer program")
    ap.add_argument("--bf16", action="store_true",
                    help="under torch.autocast(cpu, bf16) instead, the cases named <name>_bf16")
    a = ap.parse_args()
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(), "results": {}}
    for name, kwargs, side, batches in CASES:
        for b in batches:
            for nhwc in (False, True):
                base = f"{name}{'_nhwc' if nhwc else ''}{'_bf16' if a.bf16 else ''}/{b}"
                modes = ["", "/compile"] if a.compile else [""]
                if a.libtorch and kwargs.get("in_channels", 3) == 3:
                    modes.append("/libtorch")
                for mode in modes:
                    case = base + mode
                    if a.filter not in case:
                        continue
                    if mode == "/libtorch":
                        ips = libtorch_images_per_s(a.libtorch, kwargs, side, b, a.seconds, nhwc,
                                                    a.bf16)
                    else:
                        ips = images_per_s(kwargs, side, b, a.seconds, nhwc, mode == "/compile",
                                           a.bf16)
                    out["results"][case] = ips
                    print(f"{case}: {ips:.1f} images/s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
