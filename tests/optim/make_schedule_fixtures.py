#!/usr/bin/env python3
"""Writes tests/optim/data/schedules.json: learning rates from PyTorch's own schedulers.

tests/optim/test_schedule.cpp builds the matching ember schedule (optim::StepDecay, ...) from each
case's "ember" entry and compares its lr at every step with "lrs" (relative 1e-12). "lrs"[k] is the
lr that optimizer step k uses: the group's lr before the (k+1)-th optimizer.step(), with
scheduler.step() called after each optimizer.step(), which is PyTorch's documented order.

The tests do not need Python; rerun this only to regenerate the fixture (pip install torch).
Written with torch 2.x (the version is stored in the file).
"""
import json
import os

import torch
from torch.optim import SGD
from torch.optim.lr_scheduler import (CosineAnnealingLR, LinearLR, MultiStepLR, PolynomialLR,
                                      SequentialLR, StepLR)

STEPS = 51  # steps 0..50


def trace(lr, make_scheduler, steps=STEPS):
    """The lr of optimizer steps 0..steps-1 under the scheduler make_scheduler(optimizer) builds."""
    param = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = SGD([param], lr=lr)
    sched = make_scheduler(opt)
    lrs = []
    for _ in range(steps):
        lrs.append(float(opt.param_groups[0]["lr"]))
        opt.step()  # no gradient: changes nothing, but keeps PyTorch's step order
        sched.step()
    return lrs


def main() -> None:
    cases = [
        {
            "name": "step",
            "torch": "StepLR(step_size=7, gamma=0.5)",
            "ember": {"kind": "StepDecay", "lr": 0.1, "step_size": 7, "gamma": 0.5},
            "lrs": trace(0.1, lambda o: StepLR(o, step_size=7, gamma=0.5)),
        },
        {
            # 25 twice: gamma applies twice there, in both libraries.
            "name": "multistep",
            "torch": "MultiStepLR(milestones=[10, 25, 25, 40], gamma=0.3)",
            "ember": {"kind": "MultiStepDecay", "lr": 0.2, "milestones": [10, 25, 25, 40],
                      "gamma": 0.3},
            "lrs": trace(0.2, lambda o: MultiStepLR(o, milestones=[10, 25, 25, 40], gamma=0.3)),
        },
        {
            # Only up to T_max: past it PyTorch's cosine rises again and CosineDecay holds.
            "name": "cosine",
            "torch": "CosineAnnealingLR(T_max=50, eta_min=0.001)",
            "ember": {"kind": "CosineDecay", "lr": 0.1, "decay_steps": 50, "min_lr": 0.001},
            "lrs": trace(0.1, lambda o: CosineAnnealingLR(o, T_max=50, eta_min=0.001)),
        },
        {
            "name": "cosine_to_zero",
            "torch": "CosineAnnealingLR(T_max=50, eta_min=0)",
            "ember": {"kind": "CosineDecay", "lr": 0.4, "decay_steps": 50, "min_lr": 0.0},
            "lrs": trace(0.4, lambda o: CosineAnnealingLR(o, T_max=50, eta_min=0.0)),
        },
        {
            "name": "warmup_cosine",
            "torch": "SequentialLR([LinearLR(start_factor=0.1, end_factor=1.0, total_iters=6), "
                     "CosineAnnealingLR(T_max=45, eta_min=0.0)], milestones=[6])",
            "ember": {"kind": "Warmup", "warmup_steps": 6, "start_factor": 0.1,
                      "after": {"kind": "CosineDecay", "lr": 0.5, "decay_steps": 45,
                                "min_lr": 0.0}},
            "lrs": trace(0.5, lambda o: SequentialLR(
                o, [LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=6),
                    CosineAnnealingLR(o, T_max=45, eta_min=0.0)], milestones=[6])),
        },
        {
            # PolynomialLR has no end_lr: these are PolynomialDecay with end_lr 0.
            "name": "poly_power1",
            "torch": "PolynomialLR(total_iters=40, power=1.0)",
            "ember": {"kind": "PolynomialDecay", "lr": 0.3, "end_lr": 0.0, "decay_steps": 40,
                      "power": 1.0},
            "lrs": trace(0.3, lambda o: PolynomialLR(o, total_iters=40, power=1.0)),
        },
        {
            "name": "poly_power2",
            "torch": "PolynomialLR(total_iters=40, power=2.0)",
            "ember": {"kind": "PolynomialDecay", "lr": 2.5, "end_lr": 0.0, "decay_steps": 40,
                      "power": 2.0},
            "lrs": trace(2.5, lambda o: PolynomialLR(o, total_iters=40, power=2.0)),
        },
    ]
    doc = {"torch_version": torch.__version__, "cases": cases}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "schedules.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)  # floats as repr: they read back exactly
        f.write("\n")
    print(f"wrote {out} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
