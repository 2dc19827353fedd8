#!/usr/bin/env python3
"""Writes tests/optim/data/optimizers.safetensors: reference trajectories for ember's optimizers.

The format. Every tensor is float64. For each case C (a name such as "sgd_momentum_nesterov_wd")
there are three parameters, p0 [4, 3], p1 [3] and p2 [2, 2, 3], and K = 5 steps:
    C/p{i}/init        the parameter before step 0
    C/p{i}/grad/{k}    the gradient fed to step k (k = 0..4; drawn from a fixed numpy seed, new at
                       every step; not the gradient of any loss, which the rules do not need)
    C/p{i}/after/{k}   the parameter after step k
The safetensors __metadata__ maps C to a JSON string of the options: {"optimizer": "sgd" | "lars" |
"adamw" | "lamb", "lr", ..., "excluded": [...], "steps": 5, "rule": "..."}, where "excluded" lists
the parameters treated as bias / batch-norm / LayerNorm parameters (p1 in the LARS and LAMB cases)
and "rule" states the update in words. The lr is constant. The one clipping case, C =
"global_norm_clip" (and "global_norm_clip_below", whose norm is under max_norm), has instead
    C/p{i}/grad        the gradients
    C/p{i}/clipped     them after torch.nn.utils.clip_grad_norm_(max_norm=1.0)
and its metadata holds max_norm, total_norm (float64 repr: exact) and the rule.

SGD and AdamW come from torch.optim (foreach=False, float64). LARS and LAMB have no torch.optim
class; they are written out below, as MLPerf's references run them. The exact rules (w the
parameter, g its gradient, ||.|| the L2 norm over the whole tensor, t = k + 1 at step k):

LARS (MLPerf ResNet-50: the MLCommons reference's LARSOptimizer, as NVIDIA's MXNet and PyTorch
LARS run it), momentum buffer v starting at 0:
    not excluded:  trust = eta * ||w|| / (||g|| + wd * ||w|| + eps)  if ||w|| > 0 and ||g|| > 0
                           1                                          otherwise
                   v = momentum * v + lr * trust * (g + wd * w)
    excluded:      v = momentum * v + lr * g        (no weight decay, no trust ratio)
    then           w = w - v
  Both norms are of the raw gradient and the weight before the step. eta (trust_coefficient) 0.001,
  momentum 0.9, wd 5e-5, eps 0, no Nesterov. (The MLCommons TF2 code turns epsilon 0 into Keras's
  1e-7 through `epsilon or backend_config.epsilon()`; the rule here keeps eps as given, 0.)

LAMB (MLPerf BERT: the MLCommons BERT reference's LAMBOptimizer, and NVIDIA apex's FusedLAMB with
its default use_nvlamb=False), moments m and v starting at 0:
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    u = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
    not excluded:  u = u + wd * w
                   ratio = ||w|| / ||u||  if ||w|| > 0 and ||u|| > 0, else 1
    excluded:      ratio = 1                        (no weight decay, no trust ratio: an Adam step)
    w = w - lr * ratio * u
  beta1 0.9, beta2 0.999, eps 1e-6, wd 0.01. Excluded parameters skip the trust ratio as well as the
  weight decay: the MLCommons reference passes only exclude_from_weight_decay, and its LAMB sets
  exclude_from_layer_adaptation to that same list when none is given; apex applies the ratio only
  to parameters whose weight decay is non-zero. The global gradient clipping that both references
  do before LAMB (max norm 1.0) is not part of these cases: see global_norm_clip.

The tests do not need Python; rerun this only to regenerate the fixture (pip install torch numpy
safetensors). Written with torch 2.x (its version is in the metadata under "generator").
"""
import json
import os
import struct

import numpy as np
import torch
from safetensors import safe_open

SHAPES = [(4, 3), (3,), (2, 2, 3)]
STEPS = 5
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "optimizers.safetensors")


def draw(seed, grad_scale=0.5):
    """Initial parameters and the gradients of every step, from a fixed numpy seed."""
    rng = np.random.default_rng(seed)
    init = [torch.from_numpy(rng.standard_normal(s)) for s in SHAPES]
    grads = [[torch.from_numpy(grad_scale * rng.standard_normal(s)) for s in SHAPES]
             for _ in range(STEPS)]
    return init, grads


def run_torch(make_optimizer, init, grads):
    """The parameters after each step of a torch.optim optimizer."""
    params = [t.clone().requires_grad_(True) for t in init]
    opt = make_optimizer(params)
    after = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        opt.step()
        after.append([p.detach().clone() for p in params])
    return after


def run_lars(init, grads, lr, momentum, weight_decay, trust_coefficient, eps, excluded):
    """LARS as the module docstring states it."""
    w = [t.clone() for t in init]
    v = [torch.zeros_like(t) for t in init]
    after = []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            if i in excluded:
                v[i] = momentum * v[i] + lr * g
            else:
                w_norm = torch.linalg.vector_norm(w[i]).item()
                g_norm = torch.linalg.vector_norm(g).item()
                trust = 1.0
                if w_norm > 0 and g_norm > 0:
                    trust = trust_coefficient * w_norm / (g_norm + weight_decay * w_norm + eps)
                v[i] = momentum * v[i] + (lr * trust) * (g + weight_decay * w[i])
            w[i] = w[i] - v[i]
        after.append([t.clone() for t in w])
    return after


def run_lamb(init, grads, lr, beta1, beta2, eps, weight_decay, excluded):
    """LAMB as the module docstring states it."""
    w = [t.clone() for t in init]
    m = [torch.zeros_like(t) for t in init]
    v = [torch.zeros_like(t) for t in init]
    after = []
    for k, step_grads in enumerate(grads):
        t = k + 1
        for i, g in enumerate(step_grads):
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            u = (m[i] / (1 - beta1**t)) / (torch.sqrt(v[i] / (1 - beta2**t)) + eps)
            ratio = 1.0
            if i not in excluded:
                u = u + weight_decay * w[i]
                w_norm = torch.linalg.vector_norm(w[i]).item()
                u_norm = torch.linalg.vector_norm(u).item()
                if w_norm > 0 and u_norm > 0:
                    ratio = w_norm / u_norm
            w[i] = w[i] - (lr * ratio) * u
        after.append([t.clone() for t in w])
    return after


SGD_RULE = ("torch.optim.SGD: d = g + wd * w; b = d at the first step, else b = momentum * b + "
            "(1 - dampening) * d; d = d + momentum * b if nesterov else b (d itself when momentum "
            "is 0); w = w - lr * d")
ADAMW_RULE = ("torch.optim.AdamW: w = w * (1 - lr * wd); m = beta1 * m + (1 - beta1) * g; v = "
              "beta2 * v + (1 - beta2) * g^2; w = w - lr * (m / (1 - beta1^t)) / "
              "(sqrt(v / (1 - beta2^t)) + eps), t = k + 1")
LARS_RULE = ("not excluded: trust = eta * ||w|| / (||g|| + wd * ||w|| + eps) if ||w|| > 0 and "
             "||g|| > 0 else 1; v = momentum * v + lr * trust * (g + wd * w). excluded: v = "
             "momentum * v + lr * g (no weight decay, no trust ratio). Then w = w - v. v starts "
             "at 0; norms are of the raw g and of w before the step; eta = trust_coefficient")
LAMB_RULE = ("m = beta1 * m + (1 - beta1) * g; v = beta2 * v + (1 - beta2) * g^2; u = (m / (1 - "
             "beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps), t = k + 1. not excluded: u = u + wd * "
             "w; ratio = ||w|| / ||u|| if ||w|| > 0 and ||u|| > 0 else 1. excluded: ratio = 1 "
             "(no weight decay, no trust ratio). w = w - lr * ratio * u; ||w|| is before the step")
CLIP_RULE = ("torch.nn.utils.clip_grad_norm_: total_norm = sqrt(sum over all params of ||g||^2); "
             "coef = min(1, max_norm / (total_norm + 1e-6)); g = g * coef")


def optimizer_cases():
    """(name, options, init, grads, after) for every optimizer case."""
    cases = []

    def add(name, seed, options, run, mutate=None):
        init, grads = draw(seed)
        if mutate is not None:
            mutate(init, grads)
        options = dict(options, steps=STEPS)
        cases.append((name, options, init, grads, run(init, grads)))

    for seed, (name, momentum, nesterov, wd) in enumerate([
            ("sgd_plain", 0.0, False, 0.0),
            ("sgd_momentum", 0.9, False, 0.0),
            ("sgd_momentum_nesterov_wd", 0.9, True, 1e-4)]):
        options = {"optimizer": "sgd", "lr": 0.1, "momentum": momentum, "dampening": 0.0,
                   "nesterov": nesterov, "weight_decay": wd, "excluded": [], "rule": SGD_RULE}
        add(name, 100 + seed, options, lambda init, grads, o=options: run_torch(
            lambda ps: torch.optim.SGD(ps, lr=o["lr"], momentum=o["momentum"], dampening=0.0,
                                       nesterov=o["nesterov"], weight_decay=o["weight_decay"],
                                       foreach=False), init, grads))

    for seed, (name, wd) in enumerate([("adamw_wd", 0.01), ("adamw_no_wd", 0.0)]):
        options = {"optimizer": "adamw", "lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
                   "weight_decay": wd, "amsgrad": False, "excluded": [], "rule": ADAMW_RULE}
        add(name, 200 + seed, options, lambda init, grads, o=options: run_torch(
            lambda ps: torch.optim.AdamW(ps, lr=o["lr"], betas=(o["beta1"], o["beta2"]),
                                         eps=o["eps"], weight_decay=o["weight_decay"],
                                         amsgrad=False, foreach=False), init, grads))

    def zero_norms(init, grads):
        init[0].zero_()      # ||w|| = 0 at step 0
        grads[2][2].zero_()  # ||g|| = 0 at step 2

    lars = {"optimizer": "lars", "lr": 2.0, "momentum": 0.9, "nesterov": False,
            "dampening": 0.0, "weight_decay": 5e-5, "trust_coefficient": 0.001, "eps": 0.0,
            "excluded": [1], "excluded_apply_weight_decay": False,
            "excluded_apply_trust_ratio": False, "rule": LARS_RULE}
    run = lambda init, grads: run_lars(init, grads, lars["lr"], lars["momentum"],  # noqa: E731
                                       lars["weight_decay"], lars["trust_coefficient"],
                                       lars["eps"], lars["excluded"])
    add("lars", 300, lars, run)
    add("lars_zero_norms", 301, dict(lars, note="p0 starts at 0; p2's gradient is 0 at step 2"),
        run, zero_norms)

    lamb = {"optimizer": "lamb", "lr": 0.01, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6,
            "weight_decay": 0.01, "bias_correction": True, "excluded": [1],
            "excluded_apply_weight_decay": False, "excluded_apply_trust_ratio": False,
            "rule": LAMB_RULE}
    run = lambda init, grads: run_lamb(init, grads, lamb["lr"], lamb["beta1"],  # noqa: E731
                                       lamb["beta2"], lamb["eps"], lamb["weight_decay"],
                                       lamb["excluded"])
    add("lamb", 400, lamb, run)
    add("lamb_zero_norms", 401, dict(lamb, note="p0 starts at 0; p2's gradient is 0 at step 2"),
        run, zero_norms)
    return cases


def clip_cases():
    """(name, metadata, grads, clipped) for the global-norm clipping cases."""
    cases = []
    for name, seed, scale in [("global_norm_clip", 500, 1.0), ("global_norm_clip_below", 501,
                                                                0.05)]:
        rng = np.random.default_rng(seed)
        grads = [torch.from_numpy(scale * rng.standard_normal(s)) for s in SHAPES]
        params = [torch.zeros(s, dtype=torch.float64, requires_grad=True) for s in SHAPES]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=2.0,
                                               foreach=False)
        meta = {"op": "clip_grad_norm", "max_norm": 1.0, "norm_type": 2.0,
                "total_norm": float(total), "rule": CLIP_RULE}
        cases.append((name, meta, grads, [p.grad.clone() for p in params]))
    return cases


def build():
    tensors, metadata = {}, {"generator": f"make_optimizer_fixtures.py, torch {torch.__version__}"}
    for name, options, init, grads, after in optimizer_cases():
        metadata[name] = json.dumps(options)
        for i in range(len(SHAPES)):
            tensors[f"{name}/p{i}/init"] = init[i]
            for k in range(STEPS):
                tensors[f"{name}/p{i}/grad/{k}"] = grads[k][i]
                tensors[f"{name}/p{i}/after/{k}"] = after[k][i]
    for name, meta, grads, clipped in clip_cases():
        metadata[name] = json.dumps(meta)
        for i in range(len(SHAPES)):
            tensors[f"{name}/p{i}/grad"] = grads[i]
            tensors[f"{name}/p{i}/clipped"] = clipped[i]
    tensors = {k: v.contiguous().to(torch.float64) for k, v in tensors.items()}
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """The safetensors layout, written here so that the bytes are the same on every run (the
    library's writer puts the metadata keys in hash order); verify() reads it back with the
    library. Tensors in name order, float64 little-endian, header padded with spaces to 8 bytes."""
    header, blobs, offset = {"__metadata__": dict(sorted(metadata.items()))}, [], 0
    for name in sorted(tensors):
        data = tensors[name].numpy().astype("<f8").tobytes()
        header[name] = {"dtype": "F64", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def verify(tensors, metadata):
    """Reads the file back; checks the hand-written rules against torch.optim where they meet."""
    size = os.path.getsize(OUT)
    assert size < 200_000, size
    with safe_open(OUT, framework="pt") as f:
        assert f.metadata() == metadata
        assert sorted(f.keys()) == sorted(tensors)
        for key in f.keys():
            t = f.get_tensor(key)
            assert t.dtype == torch.float64 and torch.equal(t, tensors[key]), key
    for name, text in metadata.items():
        if name != "generator":
            json.loads(text)

    def trajectory(case, i):
        return torch.stack([tensors[f"{case}/p{i}/after/{k}"] for k in range(STEPS)])

    def check_excluded_against(case, make_optimizer):
        # An excluded parameter steps as the plain torch optimizer does.
        init = [tensors[f"{case}/p1/init"]]
        grads = [[tensors[f"{case}/p1/grad/{k}"]] for k in range(STEPS)]
        want = torch.stack([a[0] for a in run_torch(make_optimizer, init, grads)])
        torch.testing.assert_close(trajectory(case, 1), want, rtol=1e-13, atol=1e-15)

    # LARS's excluded parameter: momentum SGD (torch keeps lr outside its buffer: the same at a
    # fixed lr).
    check_excluded_against("lars", lambda ps: torch.optim.SGD(ps, lr=2.0, momentum=0.9,
                                                              foreach=False))
    # LAMB's excluded parameter: Adam with LAMB's eps.
    check_excluded_against("lamb", lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.9, 0.999),
                                                               eps=1e-6, foreach=False))
    # No value is non-finite, and every parameter moves at every step.
    for key, t in tensors.items():
        assert torch.isfinite(t).all(), key
    optimizer_cases_ = [n for n in metadata
                        if n != "generator" and "optimizer" in json.loads(metadata[n])]
    assert len(optimizer_cases_) == 9, optimizer_cases_
    for case in optimizer_cases_:
        for i in range(len(SHAPES)):
            before = tensors[f"{case}/p{i}/init"]
            for k in range(STEPS):
                now = tensors[f"{case}/p{i}/after/{k}"]
                assert not torch.equal(now, before), (case, i, k)
                before = now
    clip = json.loads(metadata["global_norm_clip"])
    assert clip["total_norm"] > 1.0
    assert json.loads(metadata["global_norm_clip_below"])["total_norm"] < 1.0
    for i in range(len(SHAPES)):
        assert torch.equal(tensors[f"global_norm_clip_below/p{i}/clipped"],
                           tensors[f"global_norm_clip_below/p{i}/grad"])
    print(f"verified {OUT}: {len(tensors)} tensors, {len(metadata) - 1} cases, {size} bytes")


def main() -> None:
    torch.set_default_dtype(torch.float64)
    tensors, metadata = build()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    write_safetensors(OUT, tensors, metadata)
    verify(tensors, metadata)


if __name__ == "__main__":
    main()
