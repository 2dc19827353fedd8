#!/usr/bin/env python3
"""Writes tests/io/data/torch_mlp.safetensors: a PyTorch model's state dict saved with
safetensors.torch.save_file, plus an input and the model's output under other names, for
tests/io/test_checkpoint.cpp (ember loads the state dict into its matching module and must
reproduce the output).

The model: torch.nn.Sequential(Linear(4, 8), ReLU(), Linear(8, 3), BatchNorm1d(3)) in float32,
BatchNorm in eval mode with non-trivial running statistics. State dict names: 0.weight, 0.bias,
2.weight, 2.bias, 3.weight, 3.bias, 3.running_mean, 3.running_var, 3.num_batches_tracked.

Run: python3 tests/io/make_checkpoint_fixtures.py   (needs torch and safetensors from PyPI)
"""
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(7)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3),
                            torch.nn.BatchNorm1d(3))
with torch.no_grad():
    model[3].weight.uniform_(0.5, 1.5)
    model[3].bias.uniform_(-0.5, 0.5)
    model[3].running_mean.uniform_(-0.2, 0.2)
    model[3].running_var.uniform_(0.5, 2.0)
    model[3].num_batches_tracked.fill_(42)
model.eval()
x = torch.randn(5, 4)
with torch.no_grad():
    y = model(x)
tensors = dict(model.state_dict())
tensors["test.input"] = x
tensors["test.output"] = y
out = pathlib.Path(__file__).parent / "data" / "torch_mlp.safetensors"
save_file({k: v.contiguous() for k, v in tensors.items()}, str(out))
print("wrote", out, sorted(tensors))
