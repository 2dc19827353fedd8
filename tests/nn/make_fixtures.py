#!/usr/bin/env python3
"""Writes tests/nn/data/layers.safetensors: PyTorch's nn layers run in float64 on fixed inputs.

For each case the file holds the inputs, the parameters ember copies into its layer, the outputs,
the seed gradient `gy` (the backward of sum(y * gy)) and the gradients PyTorch computes from it,
under names `<case>.<what>`. The tests under tests/nn/ load it with ember::io::load_safetensors
and do not need Python; rerun this only to regenerate the fixture (torch 2.x, safetensors).
"""
import os

import torch
from safetensors.torch import save_file

torch.set_default_dtype(torch.float64)
GEN = torch.Generator().manual_seed(20240605)


def randn(*shape):
    return torch.randn(*shape, generator=GEN)


def rand(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape, generator=GEN) * (hi - lo) + lo


def set_params(module, scale=0.5):
    """Replaces every parameter with fixed random values (biases included, so they matter)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(*p.shape) * scale)


def run(out, case, module, x, params=None):
    """Forward, backward of sum(y * gy); saves x, parameters, y, gy and every gradient.
    `params`: the parameters by name, when `module` is a function of x rather than a module."""
    x = x.clone().requires_grad_(x.is_floating_point())
    y = module(x)
    gy = randn(*y.shape)
    params = dict(module.named_parameters()) if params is None else params
    inputs = ([x] if x.requires_grad else []) + list(params.values())
    grads = torch.autograd.grad(y, inputs, gy)
    out[f"{case}.x"] = x.detach()
    out[f"{case}.y"] = y.detach()
    out[f"{case}.gy"] = gy
    if x.requires_grad:
        out[f"{case}.gx"] = grads[0]
        grads = grads[1:]
    for (name, p), g in zip(params.items(), grads):
        out[f"{case}.{name}"] = p.detach()
        out[f"{case}.g.{name}"] = g
    return y


def main() -> None:
    out = {}
    nn = torch.nn

    # Conv2d: stride and padding, with bias; groups, dilation and rectangular everything, without.
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1)
    set_params(conv)
    run(out, "conv_a", conv, randn(2, 4, 7, 7))
    conv = nn.Conv2d(4, 6, (3, 2), stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=2,
                     bias=False)
    set_params(conv)
    run(out, "conv_g", conv, randn(2, 4, 6, 5))

    # BatchNorm2d: two training forwards (running statistics, num_batches_tracked), the first
    # with its backward; then evaluation with its backward.
    bn = nn.BatchNorm2d(3)
    set_params(bn)
    run(out, "bn_t1", bn, randn(4, 3, 5, 5) * 2 + 1)
    x2 = randn(4, 3, 5, 5) * 0.5 - 2
    with torch.no_grad():
        out["bn_t2.y"] = bn(x2)
    out["bn_t2.x"] = x2
    out["bn_t2.running_mean"] = bn.running_mean.clone()
    out["bn_t2.running_var"] = bn.running_var.clone()
    out["bn_t2.num_batches_tracked"] = bn.num_batches_tracked.clone()
    bn.eval()
    run(out, "bn_e", bn, randn(2, 3, 4, 4))
    # relu(bn(x) + residual) in training, ResNet's block ending.
    bnr = nn.BatchNorm2d(3)
    set_params(bnr)
    xr = randn(2, 3, 4, 4).requires_grad_()
    res = randn(2, 3, 4, 4).requires_grad_()
    yr = torch.relu(bnr(xr) + res)
    gyr = randn(*yr.shape)
    g = torch.autograd.grad(yr, [xr, res, bnr.weight, bnr.bias], gyr)
    out.update({"bnr.x": xr.detach(), "bnr.res": res.detach(), "bnr.weight": bnr.weight.detach(),
                "bnr.bias": bnr.bias.detach(), "bnr.y": yr.detach(), "bnr.gy": gyr,
                "bnr.gx": g[0], "bnr.gres": g[1], "bnr.g.weight": g[2], "bnr.g.bias": g[3],
                "bnr.running_mean": bnr.running_mean.clone(),
                "bnr.running_var": bnr.running_var.clone()})

    # LayerNorm over the last two dims.
    ln = nn.LayerNorm([4, 5])
    set_params(ln)
    run(out, "ln", ln, randn(2, 3, 4, 5) * 3 + 1)

    # Embedding: repeated ids, so the weight's gradient sums.
    emb = nn.Embedding(10, 4)
    set_params(emb, 1.0)
    run(out, "emb", emb, torch.tensor([[1, 3, 3, 9], [0, 1, 7, 3]], dtype=torch.int64))

    # Activations.
    xa = torch.linspace(-6, 6, 41)
    run(out, "relu", nn.ReLU(), xa.reshape(1, 41) + 0.05)
    run(out, "gelu", nn.GELU(), xa.reshape(41, 1))
    run(out, "gelu_tanh", nn.GELU(approximate="tanh"), xa.reshape(41, 1))

    # Pooling.
    run(out, "mp_a", nn.MaxPool2d(3, stride=2, padding=1), randn(2, 3, 7, 7))
    # ceil_mode: 7 rows in windows of 2, stride 2 make 4 rows, the last window half outside.
    run(out, "mp_b", nn.MaxPool2d((2, 3), stride=(2, 1), padding=(0, 1), dilation=(1, 2),
                                  ceil_mode=True), randn(1, 2, 7, 8))
    run(out, "ap_a", nn.AdaptiveAvgPool2d((3, 2)), randn(2, 3, 7, 5))
    run(out, "ap_g", nn.AdaptiveAvgPool2d(1), randn(2, 3, 4, 6))

    # Self-attention (batch first): a key-padding mask (PyTorch: true = ignore), then causal.
    E, H, B, S = 8, 2, 2, 5
    mha = nn.MultiheadAttention(E, H, batch_first=True)
    set_params(mha)
    keep = torch.tensor([[True, True, True, False, True], [True, True, True, True, False]])
    out["mha_mask.keep"] = keep
    params = dict(mha.named_parameters())
    run(out, "mha_mask", lambda x: mha(x, x, x, key_padding_mask=~keep, need_weights=False)[0],
        randn(B, S, E), params)
    causal = torch.triu(torch.ones(S, S, dtype=torch.bool), 1)
    run(out, "mha_causal", lambda x: mha(x, x, x, attn_mask=causal, need_weights=False)[0],
        randn(B, S, E), params)

    # Sequential(Conv2d, BatchNorm2d, ReLU, MaxPool2d) in training.
    seq = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                        nn.MaxPool2d(2))
    set_params(seq)
    run(out, "seq", seq, randn(2, 3, 6, 6))
    out["seq.1.running_mean"] = seq[1].running_mean.clone()
    out["seq.1.running_var"] = seq[1].running_var.clone()

    out = {k: v.detach().clone().contiguous() for k, v in out.items()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "layers.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file(out, path, metadata={"generator": "tests/nn/make_fixtures.py",
                                   "torch": torch.__version__})
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(out)} tensors)")


if __name__ == "__main__":
    main()
