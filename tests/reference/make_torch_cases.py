#!/usr/bin/env python3
"""Writes tests/reference/data/*.safetensors: PyTorch's own results, the oracle of test_torch_oracle.

ember promises PyTorch's names and semantics. A float64 reference written by hand in a test can
encode the same misunderstanding as the code it checks; these cases are what PyTorch itself
computes for the same inputs: every operator of docs/operators.md and every elementwise function,
forward and every input's gradient, in float64, float32 and bf16 (PyTorch's own bf16 results),
over awkward shapes (rank 0, size 1 and 0, broadcasts, strided, transposed and channels-last
inputs), the options users set, and special values (NaN, infinities, signed zeros, ties).

The format. One file per group (elementwise, reductions, operators, indexing). Every case C has
    C/in{i}     input i, dense (the case says which view of it the operator reads)
    C/out{k}    output k of the forward
    C/seed{k}   the upstream gradient of floating output k (drawn at random)
    C/grad{i}   the gradient of input i after backward(outputs, seeds) (inputs that take one)
and the __metadata__ key "cases" is a JSON list with, per case:
    name, op, dtype ("f64", "f32", "bf16"), args (the operator's options),
    inputs: [{"grad": bool, "view": null | {"permute": [...]} | {"slice": [dim, start, stop, step]}
              | {"channels_last": true}}],
    outputs: number of outputs; seeds: which outputs have a seed; grads: which inputs have one,
    tol: {"out": TOL, "grad": TOL} where TOL is ["exact"], ["ulp", k] (each element within k units
    in the last place of the dtype, at the reference's magnitude) or ["norm", c] (the largest
    difference within c * eps(dtype) * the largest magnitude of the reference; for gradients,
    of the reference or the seeds, whichever is larger).
The view is applied to the stored tensor on both sides: PyTorch computed on the view, and its
gradient is in the view's shape, as ember's is.

Tolerances come from the dtype and the kind of computation (see TOLERANCES below), not from what
passed. The tests do not need Python: rerun this only to regenerate the fixtures (pip install torch
numpy safetensors). torch's version is written into the metadata ("generator"). A rerun writes the
same tensors and cases (the safetensors header's key order may change).
"""
import json
import math
import os
import warnings

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
DTYPES = {"f64": torch.float64, "f32": torch.float32, "bf16": torch.bfloat16}
INF, NAN = math.inf, math.nan

# ---- tolerances -------------------------------------------------------------------------------
# exact: IEEE arithmetic both sides compute the same way (one rounding of the float result);
# ulp k: elementwise functions whose float library differs (ember's vs Sleef/glibc), at most k
# units in the last place (bf16 results are float results rounded once: 1 ulp);
# norm c: sums, products and chains, whose order of operations differs; c * eps * max|ref|.
EXACT = ["exact"]


def ulp(k):
    return ["ulp", k]


def norm(c):
    return ["norm", c]


# ---- inputs -----------------------------------------------------------------------------------
class Rng:
    def __init__(self, seed):
        self.g = np.random.default_rng(seed)

    def normal(self, shape, scale=1.0):
        return torch.from_numpy(np.asarray(self.g.standard_normal(shape) * scale))

    def uniform(self, shape, lo, hi):
        return torch.from_numpy(np.asarray(self.g.uniform(lo, hi, shape)))

    def ints(self, shape, lo, hi):
        return torch.from_numpy(np.asarray(self.g.integers(lo, hi, shape), dtype=np.int64))

    def bools(self, shape, p=0.5):
        return torch.from_numpy(np.asarray(self.g.random(shape) < p))


class Input:
    """An input: the stored tensor (float64 values, converted to the case's dtype for floating
    inputs), whether it takes a gradient, and the view the operator reads."""

    def __init__(self, value, grad=True, view=None, keep_dtype=False):
        self.value, self.grad, self.view, self.keep_dtype = value, grad, view, keep_dtype


def apply_view(t, view):
    if view is None:
        return t
    if "permute" in view:
        return t.permute(*view["permute"])
    if "slice" in view:
        d, start, stop, step = view["slice"]
        index = [slice(None)] * t.dim()
        index[d] = slice(start, stop, step)
        return t[tuple(index)]
    if view.get("channels_last"):
        return t.contiguous(memory_format=torch.channels_last)
    raise ValueError(view)


class Writer:
    def __init__(self, group):
        self.group, self.tensors, self.cases = group, {}, []

    def add(self, name, op, dtype, inputs, fn, args=None, tol_out=EXACT, tol_grad=None, seed=0):
        """Runs fn on the inputs in `dtype` and records the case."""
        tdtype = DTYPES[dtype]
        assert name not in {c["name"] for c in self.cases}, name
        leaves, meta_inputs = [], []
        for i, inp in enumerate(inputs):
            v = inp.value
            if v.is_floating_point() and not inp.keep_dtype:
                v = v.to(tdtype)
            self.tensors[f"{name}/in{i}"] = v.contiguous().clone()
            x = apply_view(v, inp.view)
            takes_grad = inp.grad and v.is_floating_point()
            if takes_grad:
                x = x.detach().requires_grad_(True)
            leaves.append(x)
            meta_inputs.append({"grad": takes_grad, "view": inp.view})
        result = fn(*leaves)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        rng = Rng(seed + 7919)
        seeded, seeds = [], []
        for k, o in enumerate(outs):
            self.tensors[f"{name}/out{k}"] = o.detach().contiguous().clone()
            if o.requires_grad:
                s = rng.normal(tuple(o.shape)).to(o.dtype)
                self.tensors[f"{name}/seed{k}"] = s
                seeded.append(k)
                seeds.append(s)
        grads = []
        if seeded:
            torch.autograd.backward([outs[k] for k in seeded], seeds)
            for i, x in enumerate(leaves):
                if meta_inputs[i]["grad"]:
                    g = x.grad if x.grad is not None else torch.zeros_like(x)
                    self.tensors[f"{name}/grad{i}"] = g.detach().contiguous().clone()
                    grads.append(i)
        if tol_grad is None:
            tol_grad = tol_out
        self.cases.append({"name": name, "op": op, "dtype": dtype, "args": args or {},
                           "inputs": meta_inputs, "outputs": len(outs), "seeds": seeded,
                           "grads": grads, "tol": {"out": tol_out, "grad": tol_grad}})

    def save(self):
        os.makedirs(OUT_DIR, exist_ok=True)
        meta = {"cases": json.dumps(self.cases, separators=(",", ":")),
                "generator": f"tests/reference/make_torch_cases.py, torch {torch.__version__}"}
        path = os.path.join(OUT_DIR, f"{self.group}.safetensors")
        save_file(self.tensors, path, metadata=meta)
        print(f"{path}: {len(self.cases)} cases, {os.path.getsize(path)} bytes")


# Shapes every elementwise case runs on: a plain one, rank 0, size 1, size 0, a transposed view.
SHAPES = {"mat": (3, 5), "rank0": (), "one": (1,), "empty": (0, 3)}


def special_values():
    return torch.tensor([-INF, -3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 40.0, INF, NAN],
                        dtype=torch.float64)


# ---- elementwise ------------------------------------------------------------------------------
# name: (torch function, input domain (lo, hi) or None for normal(0, 2), exact: both libraries
# compute it with IEEE operations alone, so the results are equal in every dtype)
def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


UNARY = {
    "neg": (torch.neg, None, True),
    "abs": (torch.abs, None, True),
    "square": (torch.square, None, True),
    "sign": (torch.sign, None, True),
    "exp": (torch.exp, None, False),
    "exp2": (torch.exp2, None, False),
    "log": (torch.log, (0.05, 4.0), False),
    "log2": (torch.log2, (0.05, 4.0), False),
    "log1p": (torch.log1p, (-0.9, 3.0), False),
    "expm1": (torch.expm1, None, False),
    "sqrt": (torch.sqrt, (0.0, 4.0), False),  # PyTorch's float64 sqrt is not always correctly
                                              # rounded (sqrt(0.5) 1 ulp low); ember's is
    "rsqrt": (torch.rsqrt, (0.05, 4.0), False),
    "sin": (torch.sin, None, False),
    "cos": (torch.cos, None, False),
    "tan": (torch.tan, (-1.2, 1.2), False),
    "tanh": (torch.tanh, None, False),
    "erf": (torch.erf, None, False),
    "floor": (torch.floor, None, True),
    "ceil": (torch.ceil, None, True),
    "round": (torch.round, None, True),
    "reciprocal": (torch.reciprocal, (0.1, 3.0), True),
    "sigmoid": (torch.sigmoid, None, False),
    "relu": (torch.relu, None, True),
    "silu": (F.silu, None, False),
    "gelu": (F.gelu, None, False),
    "gelu_tanh": (gelu_tanh, None, False),
}


# Special values where ember differs from PyTorch on purpose (docs/operators.md): sign(NaN) is NaN
# (PyTorch: 0, which hides the NaN); gelu(+inf) is +inf (PyTorch's vectorised float and bf16
# kernel: NaN, though +inf for a tensor of one element; 16 copies here so its vector loop runs).
KEPT_APART = {"sign": [NAN], "gelu": [INF]}


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def cancelling_tol(name, dtype, fn_tol):
    """GELU and SiLU lose relative accuracy for negative x in both libraries (1 + erf(x / sqrt 2)
    cancels; ember's float GELU measured 10x closer to the exact value than PyTorch's there): their
    error is relative to the largest value, not to each one."""
    if name in ("gelu", "gelu_tanh", "silu") and dtype != "bf16":
        return norm(4)
    return fn_tol


def elementwise(w):
    for dtype in DTYPES:
        fn_tol = ulp(2) if dtype == "f64" else ulp(4) if dtype == "f32" else ulp(1)
        # Gradients: the local derivative times the seed. In bf16 PyTorch differentiates through
        # its bf16-rounded output where ember's fused backward keeps the float value, so bf16
        # gradients are compared to 2 eps of the largest.
        # Gradients are compared to the largest of the gradient and the seed: the local
        # derivative's error is relative to 1 (1 - y * y of a saturated tanh cancels), times the
        # seed.
        grad_tol = norm(8) if dtype != "bf16" else norm(2)
        for i, (name, (fn, domain, exact)) in enumerate(UNARY.items()):
            rng = Rng(1000 + i)
            for shape_name, shape in SHAPES.items():
                x = rng.normal(shape, 2.0) if domain is None else rng.uniform(shape, *domain)
                out_tol = EXACT if exact else cancelling_tol(name, dtype, fn_tol)
                w.add(f"{name}.{dtype}.{shape_name}", name, dtype, [Input(x)], fn,
                      tol_out=out_tol, tol_grad=grad_tol, seed=i)
            x = rng.normal((3, 4), 2.0) if domain is None else rng.uniform((3, 4), *domain)
            w.add(f"{name}.{dtype}.transposed", name, dtype, [Input(x, view={"permute": [1, 0]})],
                  fn, tol_out=EXACT if exact else cancelling_tol(name, dtype, fn_tol),
                  tol_grad=grad_tol, seed=i)
            # Special values: forward only (the derivatives at infinities and NaN are checked
            # where PyTorch defines them, below). A value where ember differs on purpose is a case
            # of its own, "<name>.<dtype>.kept" (test_torch_elementwise.cpp lists them).
            special, kept = special_values(), KEPT_APART.get(name, [])
            keep = torch.tensor([not any(same(v, k) for k in kept) for v in special.tolist()])
            w.add(f"{name}.{dtype}.special", name, dtype, [Input(special[keep], grad=False)],
                  fn, tol_out=EXACT if exact else cancelling_tol(name, dtype, fn_tol))
            if kept:
                w.add(f"{name}.{dtype}.kept", name, dtype,
                      [Input(torch.tensor(kept * 16, dtype=torch.float64), grad=False)], fn,
                      tol_out=EXACT if exact else cancelling_tol(name, dtype, fn_tol))
        # Parameterised unary functions.
        rng = Rng(1100)
        for slope in (0.01, 0.2):
            w.add(f"leaky_relu.{dtype}.{slope}", "leaky_relu", dtype,
                  [Input(rng.normal((4, 5), 2.0))],
                  lambda x, s=slope: F.leaky_relu(x, s), {"negative_slope": slope},
                  tol_out=ulp(1) if dtype != "bf16" else EXACT, tol_grad=grad_tol)
        for beta, threshold in ((1.0, 20.0), (2.0, 3.0), (0.5, 1.0)):
            x = rng.normal((4, 5), 4.0)
            w.add(f"softplus.{dtype}.{beta}.{threshold}", "softplus", dtype, [Input(x)],
                  lambda x, b=beta, t=threshold: F.softplus(x, b, t),
                  {"beta": beta, "threshold": threshold}, tol_out=fn_tol, tol_grad=grad_tol)
        # Gradients where the function has a kink or a special point: abs, relu, sign at +-0,
        # clamp at its bounds, max/min at ties.
        kinks = torch.tensor([-1.0, -0.0, 0.0, 1.0], dtype=torch.float64)
        for name in ("abs", "relu", "sign", "sqrt"):
            fn = UNARY[name][0]
            x = kinks.abs() if name == "sqrt" else kinks
            w.add(f"{name}.{dtype}.kinks", name, dtype, [Input(x)], fn, tol_out=EXACT,
                  tol_grad=EXACT)
        binary(w, dtype, fn_tol, grad_tol)


BINARY = {
    "add": (torch.add, True),
    "sub": (torch.sub, True),
    "mul": (torch.mul, True),
    "div": (torch.div, True),
    "pow": (torch.pow, False),
    "minimum": (torch.minimum, True),
    "maximum": (torch.maximum, True),
}
BROADCASTS = {"same": ((3, 4), (3, 4)), "row": ((3, 4), (4,)), "col": ((3, 1), (1, 4)),
              "rank0": ((3, 4), ()), "empty": ((0, 4), (1, 4))}


def binary(w, dtype, fn_tol, grad_tol):
    for i, (name, (fn, exact)) in enumerate(BINARY.items()):
        rng = Rng(2000 + i)
        out_tol = EXACT if exact else fn_tol
        # Broadcast gradients are sums over the broadcast axes: a few roundings.
        bgrad = grad_tol if dtype == "bf16" else norm(8)
        for bname, (sa, sb) in BROADCASTS.items():
            a = rng.uniform(sa, 0.2, 3.0) if name == "pow" else rng.normal(sa)
            b = rng.uniform(sb, -2.0, 2.5) if name == "pow" else rng.normal(sb)
            if name == "div":
                b = b.sign() * (b.abs() + 0.5)
            w.add(f"{name}.{dtype}.{bname}", name, dtype, [Input(a), Input(b)], fn,
                  tol_out=out_tol, tol_grad=grad_tol if bname == "same" else bgrad, seed=i)
        a = rng.normal((4, 3))
        b = rng.normal((3, 4))
        if name == "pow":
            a, b = a.abs() + 0.2, b.clamp(-2, 2)
        if name == "div":
            b = b.sign() * (b.abs() + 0.5)
        w.add(f"{name}.{dtype}.strided", name, dtype,
              [Input(a, view={"permute": [1, 0]}), Input(b)], fn, tol_out=out_tol,
              tol_grad=grad_tol, seed=i)
        # A number on either side.
        x = rng.uniform((2, 3), 0.2, 3.0) if name == "pow" else rng.normal((2, 3))
        for side, number in (("right", 2.5), ("left", 1.5)):
            f = (lambda t, fn=fn, c=number: fn(t, torch.tensor(c, dtype=t.dtype))) if side == "right" else \
                (lambda t, fn=fn, c=number: fn(torch.tensor(c, dtype=t.dtype), t))
            w.add(f"{name}.{dtype}.number_{side}", name, dtype, [Input(x)], f,
                  {"number": number, "side": side}, tol_out=out_tol, tol_grad=grad_tol, seed=i)
        # Special values and ties.
        s = special_values()
        t = s.flip(0)
        t[5] = 0.0  # a tie with +0 against +0... and -0 against +0 at position 4
        t[2] = -1.0  # a tie of equal values
        if name in ("minimum", "maximum", "add", "sub", "mul", "div", "pow"):
            w.add(f"{name}.{dtype}.special", name, dtype, [Input(s), Input(t)], fn,
                  tol_out=out_tol, tol_grad=EXACT if name in ("minimum", "maximum") else grad_tol,
                  seed=i)
    # clamp with tensor bounds (lo > hi somewhere), lerp, where.
    rng = Rng(2100)
    x, lo, hi = rng.normal((3, 5), 2.0), rng.normal((3, 5)), rng.normal((5,))
    lo[0, 0], hi[0] = 0.5, 0.5  # a tie at both bounds
    x[0, 0] = 0.5
    w.add(f"clamp.{dtype}.tensors", "clamp", dtype, [Input(x), Input(lo), Input(hi)],
          lambda x, lo, hi: torch.clamp(x, lo, hi), tol_out=EXACT, tol_grad=EXACT)
    w.add(f"clamp.{dtype}.numbers", "clamp", dtype, [Input(x)],
          lambda x: torch.clamp(x, -0.5, 1.0), {"lo": -0.5, "hi": 1.0}, tol_out=EXACT,
          tol_grad=EXACT)
    a, b, wt = rng.normal((3, 4)), rng.normal((4,)), rng.uniform((3, 1), -0.5, 1.5)
    wt[0, 0], wt[1, 0] = 0.0, 1.0
    w.add(f"lerp.{dtype}.tensors", "lerp", dtype, [Input(a), Input(b), Input(wt)], torch.lerp,
          tol_out=fn_tol, tol_grad=grad_tol if dtype == "bf16" else norm(8))
    w.add(f"lerp.{dtype}.number", "lerp", dtype, [Input(a), Input(b.expand(3, 4).clone())],
          lambda a, b: torch.lerp(a, b, 0.3), {"weight": 0.3}, tol_out=fn_tol, tol_grad=grad_tol)
    c = rng.bools((3, 4))
    w.add(f"where.{dtype}", "where", dtype, [Input(c), Input(a), Input(b)], torch.where,
          tol_out=EXACT, tol_grad=EXACT if dtype != "f64" else norm(1))
    w.add(f"masked_fill.{dtype}", "masked_fill", dtype, [Input(a), Input(rng.bools((4,)))],
          lambda a, m: a.masked_fill(m, -2.5), {"value": -2.5}, tol_out=EXACT, tol_grad=EXACT)
    # Comparisons and logic (bool results).
    a, b = rng.ints((3, 4), -2, 3).double(), rng.ints((4,), -2, 3).double()
    for name, fn in (("eq", torch.eq), ("ne", torch.ne), ("lt", torch.lt), ("le", torch.le),
                     ("gt", torch.gt), ("ge", torch.ge)):
        w.add(f"{name}.{dtype}", name, dtype, [Input(a, grad=False), Input(b, grad=False)], fn)
    p, q = rng.bools((3, 4)), rng.bools((4,))
    w.add(f"logical_and.{dtype}", "logical_and", dtype, [Input(p), Input(q)], torch.logical_and)
    w.add(f"logical_or.{dtype}", "logical_or", dtype, [Input(p), Input(q)], torch.logical_or)
    w.add(f"logical_not.{dtype}", "logical_not", dtype, [Input(p)], torch.logical_not)
    s = special_values()
    w.add(f"isnan.{dtype}", "isnan", dtype, [Input(s, grad=False)], torch.isnan)
    w.add(f"eq.{dtype}.special", "eq", dtype, [Input(s, grad=False), Input(s.flip(0), grad=False)],
          torch.eq)


# ---- reductions -------------------------------------------------------------------------------
def reductions(w):
    for dtype in DTYPES:
        # Sums of n terms in a different order: c * eps * max|ref| with c ~ the terms' count
        # scale; bf16 results are float sums rounded once (1 ulp, 2 eps of the largest).
        tol = norm(16) if dtype != "bf16" else norm(2)
        gtol = norm(4) if dtype != "bf16" else norm(2)
        rng = Rng(3000)
        x = rng.normal((3, 4, 5))
        for name, fn in (("sum", torch.sum), ("mean", torch.mean), ("amax", torch.amax),
                         ("amin", torch.amin), ("logsumexp", torch.logsumexp)):
            for dims, keep in (([1], False), ([-1], True), ([0, 2], False), ([], False)):
                tdims = tuple(dims) if dims else tuple(range(x.dim()))
                w.add(f"{name}.{dtype}.{dims}.{keep}", name, dtype, [Input(x)],
                      lambda t, fn=fn, d=tdims, k=keep: fn(t, d, keepdim=k),
                      {"dims": dims, "keepdim": keep}, tol_out=tol, tol_grad=gtol)
            w.add(f"{name}.{dtype}.strided", name, dtype, [Input(x, view={"permute": [2, 0, 1]})],
                  lambda t, fn=fn: fn(t, (1,)), {"dims": [1], "keepdim": False}, tol_out=tol,
                  tol_grad=gtol)
        # Ties share the gradient evenly (amax/amin); a row of -inf (logsumexp's gradient there
        # is a case of its own: ember's is 0, PyTorch's NaN).
        t = torch.tensor([[1.0, 3.0, 3.0, -2.0], [-INF, -INF, -INF, -INF], [2.0, 2.0, 2.0, 2.0]],
                         dtype=torch.float64)
        w.add(f"logsumexp.{dtype}.all_neg_inf", "logsumexp", dtype, [Input(t[1:2].clone())],
              lambda v: torch.logsumexp(v, (1,)), {"dims": [1], "keepdim": False}, tol_out=tol,
              tol_grad=gtol)
        t = t[[0, 2]]
        for name, fn in (("amax", torch.amax), ("amin", torch.amin),
                         ("logsumexp", torch.logsumexp)):
            w.add(f"{name}.{dtype}.ties", name, dtype, [Input(t)],
                  lambda v, fn=fn: fn(v, (1,)), {"dims": [1], "keepdim": False}, tol_out=tol,
                  tol_grad=gtol)
        for name, fn in (("sum", torch.sum), ("mean", torch.mean)):
            w.add(f"{name}.{dtype}.empty", name, dtype, [Input(rng.normal((0, 3)))],
                  lambda v, fn=fn: fn(v, (0,)), {"dims": [0], "keepdim": False})
            w.add(f"{name}.{dtype}.rank0", name, dtype, [Input(rng.normal(()))],
                  lambda v, fn=fn: fn(v), {"dims": [], "keepdim": False}, tol_out=tol)
        # prod with zeros in the slice (one and two).
        p = rng.uniform((4, 4), 0.5, 1.5)
        p[1, 2] = 0.0
        p[2, 0] = p[2, 3] = 0.0
        w.add(f"prod.{dtype}", "prod", dtype, [Input(p)], lambda v: torch.prod(v, 1),
              {"dims": [1], "keepdim": False}, tol_out=tol, tol_grad=gtol)
        w.add(f"prod.{dtype}.all", "prod", dtype, [Input(p[:1])], lambda v: torch.prod(v),
              {"dims": [], "keepdim": False}, tol_out=tol, tol_grad=gtol)
        for correction in (0, 1, 2):
            for dims, keep in (([1], False), ([0, 2], True), ([], False)):
                tdims = tuple(dims) if dims else None
                w.add(f"var.{dtype}.{correction}.{dims}.{keep}", "var", dtype, [Input(x)],
                      lambda v, d=tdims, c=correction, k=keep: torch.var(v, d, correction=c,
                                                                         keepdim=k),
                      {"dims": dims, "keepdim": keep, "correction": correction}, tol_out=tol,
                      tol_grad=gtol)
        w.add(f"var.{dtype}.one", "var", dtype, [Input(rng.normal((3, 1)))],
              lambda v: torch.var(v, 1), {"dims": [1], "keepdim": False, "correction": 1})
        z = x.clone()
        z[0] = 0.0  # a slice of zeros: the norm's gradient at r = 0
        for p in (1.0, 2.0, 3.0, INF):
            for dims, keep in (([2], False), ([-2], True), ([], False)):
                tdims = tuple(dims) if dims else None
                w.add(f"norm.{dtype}.{p}.{dims}.{keep}", "norm", dtype, [Input(z)],
                      lambda v, d=tdims, p=p, k=keep: torch.linalg.vector_norm(v, p, d, k),
                      {"dims": dims, "keepdim": keep, "p": "inf" if p == INF else p},
                      tol_out=tol, tol_grad=gtol)
        ax = torch.tensor([[1.0, 3.0, 3.0, -2.0], [NAN, 0.0, 5.0, 5.0], [-1.0, -1.0, -4.0, -4.0]],
                          dtype=torch.float64)
        for name, fn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
            w.add(f"{name}.{dtype}", name, dtype, [Input(ax, grad=False)],
                  lambda v, fn=fn: fn(v, 1), {"dim": 1, "keepdim": False})
            w.add(f"{name}.{dtype}.keep0", name, dtype, [Input(ax[::2].clone(), grad=False)],
                  lambda v, fn=fn: fn(v, 0, keepdim=True), {"dim": 0, "keepdim": True})


# ---- operators (docs/operators.md) ------------------------------------------------------------
def chain_tols(dtype, c64=16, c32=32, c16=2):
    """Sums and chains: c * eps * max|ref| (bf16: float arithmetic rounded once, so ~1 ulp)."""
    return norm(c64 if dtype == "f64" else c32 if dtype == "f32" else c16)


def overlap_tol(dtype, contributions=4):
    """The gradient of an input element that several outputs read (overlapping pooling windows,
    padding's copies): PyTorch's bf16 kernels add the contributions in bf16, a rounding each,
    where ember adds them in float and rounds once (closer to the exact sum in every case
    measured). float and double add the same terms: exact up to the order."""
    if dtype == "bf16":
        return norm(contributions / 2)
    return norm(2)


def operators(w):
    for dtype in DTYPES:
        tol = chain_tols(dtype)
        # bf16 gradients of a chain: PyTorch rounds each node's gradient to bf16 (ember's fused
        # backward keeps float between them), a few roundings of the largest.
        gtol = chain_tols(dtype, c16=4)
        rng = Rng(4000)
        # matmul: vectors, broadcast batches, K = 0, a transposed operand.
        for label, sa, sb in (("vv", (4,), (4,)), ("mv", (3, 4), (4,)), ("vm", (4,), (4, 5)),
                              ("mm", (3, 4), (4, 5)), ("batch", (2, 1, 3, 4), (5, 4, 2)),
                              ("k0", (2, 3, 0), (0, 4)), ("large", (40, 64), (64, 48))):
            w.add(f"matmul.{dtype}.{label}", "matmul", dtype,
                  [Input(rng.normal(sa)), Input(rng.normal(sb))], torch.matmul, tol_out=tol,
                  tol_grad=gtol)
        w.add(f"matmul.{dtype}.transposed", "matmul", dtype,
              [Input(rng.normal((4, 3)), view={"permute": [1, 0]}),
               Input(rng.normal((5, 4)), view={"permute": [1, 0]})], torch.matmul, tol_out=tol,
              tol_grad=gtol)
        acts = {"none": lambda t: t, "relu": F.relu, "gelu": F.gelu, "gelu_tanh": gelu_tanh}
        for act, fa in acts.items():
            for label, sx, sw in (("small", (2, 3, 5), (4, 5)), ("large", (16, 64), (32, 64))):
                x, wt, b = rng.normal(sx), rng.normal(sw, 0.3), rng.normal((sw[0],))
                w.add(f"linear.{dtype}.{act}.{label}", "linear", dtype,
                      [Input(x), Input(wt), Input(b)],
                      lambda x, wt, b, fa=fa: fa(F.linear(x, wt, b)), {"act": act}, tol_out=tol,
                      tol_grad=gtol)
            w.add(f"linear.{dtype}.{act}.nobias", "linear", dtype,
                  [Input(rng.normal((3, 5))), Input(rng.normal((4, 5)))],
                  lambda x, wt, fa=fa: fa(F.linear(x, wt)), {"act": act}, tol_out=tol,
                  tol_grad=gtol)
            x, w1, b1 = rng.normal((6, 8)), rng.normal((16, 8), 0.3), rng.normal((16,))
            w2, b2 = rng.normal((8, 16), 0.3), rng.normal((8,))
            w.add(f"feed_forward.{dtype}.{act}", "feed_forward", dtype,
                  [Input(x), Input(w1), Input(b1), Input(w2), Input(b2)],
                  lambda x, w1, b1, w2, b2, fa=fa: F.linear(fa(F.linear(x, w1, b1)), w2, b2),
                  {"act": act}, tol_out=tol, tol_grad=gtol)
        # conv2d: padding, stride, dilation, groups, 1x1, channels-last, no bias.
        for label, xs, ws, opt, bias, cl in (
                ("pad1", (2, 4, 7, 6), (6, 4, 3, 3), dict(padding=1), True, False),
                ("stride2_dil2", (2, 4, 9, 8), (5, 4, 3, 3), dict(stride=2, dilation=2), True,
                 False),
                ("groups2", (1, 4, 6, 6), (6, 2, 3, 3), dict(padding=1, groups=2), True, False),
                ("asym", (2, 3, 7, 9), (4, 3, 2, 3), dict(stride=(2, 1), padding=(1, 0)), False,
                 False),
                ("1x1", (2, 8, 5, 5), (6, 8, 1, 1), {}, True, False),
                ("channels_last", (2, 8, 6, 6), (8, 8, 3, 3), dict(padding=1), True, True),
                ("depthwise_cl", (1, 8, 6, 6), (8, 1, 3, 3), dict(padding=1, groups=8), False,
                 True),
                ("wide", (1, 16, 7, 7), (16, 16, 3, 3), dict(padding=1), True, True)):
            inputs = [Input(rng.normal(xs), view={"channels_last": True} if cl else None),
                      Input(rng.normal(ws, 0.3))]
            if bias:
                inputs.append(Input(rng.normal((ws[0],))))
            args = {k: list(v) if isinstance(v, tuple) else [v, v] for k, v in opt.items()
                    if k != "groups"}
            args["groups"] = opt.get("groups", 1)
            w.add(f"conv2d.{dtype}.{label}", "conv2d", dtype, inputs,
                  lambda x, wt, b=None, o=opt: F.conv2d(x, wt, b, **o), args, tol_out=tol,
                  tol_grad=gtol)
        # Pooling.
        x = rng.normal((2, 3, 7, 8))
        ties = rng.ints((2, 3, 7, 8), -2, 3).double()
        nan = x.clone()
        nan[0, 0, 2, 3] = NAN
        for label, opt in (("k3s2p1", dict(kernel_size=3, stride=2, padding=1)),
                           ("ceil", dict(kernel_size=3, stride=2, ceil_mode=True)),
                           ("dil2", dict(kernel_size=2, stride=1, dilation=2, padding=1)),
                           ("k2", dict(kernel_size=2))):
            args = {"kernel": [opt["kernel_size"]] * 2, "stride": [opt.get("stride", 0)] * 2,
                    "padding": [opt.get("padding", 0)] * 2, "dilation": [opt.get("dilation", 1)] * 2,
                    "ceil_mode": opt.get("ceil_mode", False)}
            for data, v in (("", x), (".ties", ties), (".nan", nan)):
                w.add(f"max_pool2d.{dtype}.{label}{data}", "max_pool2d", dtype, [Input(v)],
                      lambda t, o=opt: F.max_pool2d(t, **o), args, tol_out=EXACT,
                      tol_grad=overlap_tol(dtype))
        w.add(f"max_pool2d.{dtype}.channels_last", "max_pool2d", dtype,
              [Input(x, view={"channels_last": True})],
              lambda t: F.max_pool2d(t, 3, 2, 1), {"kernel": [3, 3], "stride": [2, 2],
                                                    "padding": [1, 1]}, tol_out=EXACT,
              tol_grad=overlap_tol(dtype))
        for label, opt in (("k3s2p1", dict(kernel_size=3, stride=2, padding=1)),
                           ("exclude_pad", dict(kernel_size=3, stride=2, padding=1,
                                                count_include_pad=False)),
                           ("ceil", dict(kernel_size=3, stride=2, ceil_mode=True)),
                           ("ceil_pad", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
                           ("divisor", dict(kernel_size=2, stride=2, divisor_override=3))):
            args = {"kernel": [opt["kernel_size"]] * 2, "stride": [opt.get("stride", 0)] * 2,
                    "padding": [opt.get("padding", 0)] * 2, "ceil_mode": opt.get("ceil_mode", False),
                    "count_include_pad": opt.get("count_include_pad", True),
                    "divisor_override": opt.get("divisor_override", 0)}
            w.add(f"avg_pool2d.{dtype}.{label}", "avg_pool2d", dtype, [Input(x)],
                  lambda t, o=opt: F.avg_pool2d(t, **o), args, tol_out=tol, tol_grad=gtol)
        for out in ((3, 2), (1, 1), (7, 8), (4, 5)):
            w.add(f"adaptive_avg_pool2d.{dtype}.{out}", "adaptive_avg_pool2d", dtype, [Input(x)],
                  lambda t, o=out: F.adaptive_avg_pool2d(t, o), {"out": list(out)}, tol_out=tol,
                  tol_grad=gtol)
        # Softmax and log_softmax along every axis, with -inf entries.
        x = rng.normal((3, 4, 5), 2.0)
        x[0, 1, 2] = x[2, 0, 0] = -INF
        for name, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
            for axis in (-1, 0, 1):
                w.add(f"{name}.{dtype}.axis{axis}", name, dtype, [Input(x)],
                      lambda t, fn=fn, a=axis: fn(t, a), {"axis": axis}, tol_out=tol,
                      tol_grad=gtol)
            w.add(f"{name}.{dtype}.strided", name, dtype,
                  [Input(rng.normal((5, 4)), view={"permute": [1, 0]})],
                  lambda t, fn=fn: fn(t, -1), {"axis": -1}, tol_out=tol, tol_grad=gtol)
        # Losses.
        logits = rng.normal((6, 5), 2.0)
        targets = torch.tensor([0, 1, 4, 1, 3, 2])
        with_ignored = torch.tensor([0, -100, 4, 1, -100, 2])
        for red in ("mean", "sum", "none"):
            for ls in (0.0, 0.1):
                for ig, t in ((-100, targets), (1, targets), (-100, with_ignored)):
                    label = f"{red}.ls{ls}.ignore{ig}.{'ignored' if t is with_ignored else 'all'}"
                    w.add(f"cross_entropy.{dtype}.{label}", "cross_entropy", dtype,
                          [Input(logits), Input(t)],
                          lambda x, t, r=red, l=ls, i=ig: F.cross_entropy(
                              x, t, reduction=r, label_smoothing=l, ignore_index=i),
                          {"reduction": red, "label_smoothing": ls, "ignore_index": ig},
                          tol_out=tol, tol_grad=gtol)
            for ig, t in ((-100, targets), (1, targets), (-100, with_ignored)):
                logp = F.log_softmax(logits, 1)
                w.add(f"nll_loss.{dtype}.{red}.ignore{ig}.{'ignored' if t is with_ignored else 'all'}",
                      "nll_loss", dtype, [Input(logp), Input(t)],
                      lambda x, t, r=red, i=ig: F.nll_loss(x, t, reduction=r, ignore_index=i),
                      {"reduction": red, "ignore_index": ig}, tol_out=tol, tol_grad=gtol)
            a, b = rng.normal((3, 4)), rng.normal((3, 4))
            w.add(f"mse_loss.{dtype}.{red}", "mse_loss", dtype, [Input(a), Input(b)],
                  lambda a, b, r=red: F.mse_loss(a, b, reduction=r), {"reduction": red},
                  tol_out=tol, tol_grad=gtol)
        spatial = rng.normal((3, 4, 2, 3))
        spatial_t = rng.ints((3, 2, 3), 0, 4)
        spatial_t[0, 1, 1] = -100
        w.add(f"cross_entropy.{dtype}.spatial", "cross_entropy", dtype,
              [Input(spatial), Input(spatial_t)],
              lambda x, t: F.cross_entropy(x, t, label_smoothing=0.05),
              {"reduction": "mean", "label_smoothing": 0.05, "ignore_index": -100}, tol_out=tol,
              tol_grad=gtol)
        # Normalisation.
        x = rng.normal((3, 4, 6), 2.0)
        w.add(f"layer_norm.{dtype}.affine", "layer_norm", dtype,
              [Input(x), Input(rng.normal((6,))), Input(rng.normal((6,)))],
              lambda x, g, b: F.layer_norm(x, (6,), g, b, 1e-5), {"eps": 1e-5}, tol_out=tol,
              tol_grad=gtol)
        w.add(f"layer_norm.{dtype}.plain", "layer_norm", dtype, [Input(x)],
              lambda x: F.layer_norm(x, (4, 6), eps=1e-3), {"eps": 1e-3, "normalized": [4, 6]},
              tol_out=tol, tol_grad=gtol)
        w.add(f"layer_norm.{dtype}.two_dims", "layer_norm", dtype,
              [Input(x), Input(rng.normal((4, 6))), Input(rng.normal((4, 6)))],
              lambda x, g, b: F.layer_norm(x, (4, 6), g, b), {"eps": 1e-5}, tol_out=tol,
              tol_grad=gtol)
        w.add(f"dropout_add_layer_norm.{dtype}", "dropout_add_layer_norm", dtype,
              [Input(x), Input(rng.normal((3, 4, 6))), Input(rng.normal((6,))),
               Input(rng.normal((6,)))],
              lambda x, r, g, b: F.layer_norm(x + r, (6,), g, b), {"eps": 1e-5}, tol_out=tol,
              tol_grad=gtol)
        x = rng.normal((4, 3, 5, 5), 2.0) + 1.0
        res = rng.normal((4, 3, 5, 5))
        for training in (True, False):
            for cl in (False, True):
                for name in ("batch_norm", "batch_norm_add_relu"):
                    def bn(x, g, b, *r, training=training, name=name):
                        rm = torch.linspace(-1, 1, 3, dtype=x.dtype)
                        rv = torch.linspace(0.5, 2, 3, dtype=x.dtype)
                        y = F.batch_norm(x, rm, rv, g, b, training, 0.1, 1e-5)
                        if name == "batch_norm_add_relu":
                            y = F.relu(y + r[0])
                        return y, rm, rv
                    inputs = [Input(x, view={"channels_last": True} if cl else None),
                              Input(rng.normal((3,))), Input(rng.normal((3,)))]
                    if name == "batch_norm_add_relu":
                        inputs.append(Input(res))
                    label = f"{'train' if training else 'eval'}{'.channels_last' if cl else ''}"
                    w.add(f"{name}.{dtype}.{label}", name, dtype, inputs, bn,
                          {"training": training, "momentum": 0.1, "eps": 1e-5}, tol_out=tol,
                          tol_grad=gtol)
        # Attention: masks, causal alignments with Lq != Lk, a scale, heads sharing k and v, a
        # fully masked query; both kernels.
        q, k, v = rng.normal((2, 3, 5, 8)), rng.normal((2, 3, 7, 8)), rng.normal((2, 3, 7, 8))
        mask = rng.bools((5, 7), 0.7)
        mask[2] = False  # a query that sees no key: zeros
        shared_k, shared_v = rng.normal((2, 1, 7, 8)), rng.normal((2, 1, 7, 8))
        from torch.nn.attention.bias import causal_lower_right
        sdpa = F.scaled_dot_product_attention
        cases = {
            "plain": ([q, k, v], lambda q, k, v: sdpa(q, k, v), {}),
            "mask": ([q, k, v, mask], lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), {}),
            "causal": ([q, k, v], lambda q, k, v: sdpa(q, k, v, is_causal=True),
                       {"causal": True}),
            "causal_lower_right": ([q, k, v], lambda q, k, v: sdpa(
                q, k, v, attn_mask=causal_lower_right(5, 7)), {"causal": True,
                                                              "causal_align": "lower_right"}),
            "scale": ([q, k, v], lambda q, k, v: sdpa(q, k, v, scale=0.3), {"scale": 0.3}),
            "shared_kv": ([q, shared_k, shared_v], lambda q, k, v: sdpa(
                q, k.expand(2, 3, 7, 8), v.expand(2, 3, 7, 8)), {}),
            "square_causal": ([q[:, :, :5], k[:, :, :5], v[:, :, :5]],
                              lambda q, k, v: sdpa(q, k, v, is_causal=True), {"causal": True}),
        }
        for label, (tensors, fn, args) in cases.items():
            for kernel in ("flash", "scores"):
                inputs = [Input(t.clone(), grad=t.dtype != torch.bool) for t in tensors]
                w.add(f"attention.{dtype}.{label}.{kernel}", "scaled_dot_product_attention", dtype,
                      inputs, fn, dict(args, kernel=kernel), tol_out=chain_tols(dtype, c16=4),
                      tol_grad=chain_tols(dtype, c16=8))
        # Embedding: repeats, padding_idx (negative too), max_norm renormalising the table.
        wt, ids = rng.normal((10, 4)), torch.tensor([[1, 2, 2, 9], [0, 2, 5, 1]])
        for label, kw in (("plain", {}), ("padding", {"padding_idx": 2}),
                          ("padding_negative", {"padding_idx": -1}),
                          ("max_norm", {"max_norm": 1.0}),
                          ("max_norm_p1", {"max_norm": 1.5, "norm_type": 1.0})):
            def emb(wt, ids, kw=kw):
                table = wt
                y = F.embedding(ids, table, **kw)
                return y, table.detach().clone()
            w.add(f"embedding.{dtype}.{label}", "embedding", dtype, [Input(wt), Input(ids)], emb,
                  kw, tol_out=chain_tols(dtype, c16=1), tol_grad=gtol)
        x = rng.normal((3, 4))
        w.add(f"dropout.{dtype}.eval", "dropout", dtype, [Input(x)],
              lambda t: F.dropout(t, 0.5, training=False), {"p": 0.5, "training": False})
        w.add(f"dropout.{dtype}.p0", "dropout", dtype, [Input(x)],
              lambda t: F.dropout(t, 0.0, training=True), {"p": 0.0, "training": True})


# ---- joining, indexing, rearranging, sorting --------------------------------------------------
def indexing(w):
    for dtype in DTYPES:
        tol = chain_tols(dtype)
        rng = Rng(5000)
        a, b, e = rng.normal((2, 3)), rng.normal((2, 4)), rng.normal((2, 0))
        w.add(f"cat.{dtype}.dim1", "cat", dtype, [Input(a), Input(b), Input(e)],
              lambda a, b, e: torch.cat([a, b, e], 1), {"dim": 1})
        w.add(f"cat.{dtype}.dim_neg", "cat", dtype, [Input(a), Input(rng.normal((2, 2)))],
              lambda a, b: torch.cat([a, b], -1), {"dim": -1})
        w.add(f"cat.{dtype}.skip_empty", "cat", dtype, [Input(a), Input(rng.normal((0,)))],
              lambda a, z: torch.cat([a, z], 0), {"dim": 0})
        for d in (0, 2, -1):
            w.add(f"stack.{dtype}.{d}", "stack", dtype, [Input(a), Input(rng.normal((2, 3)))],
                  lambda a, b, d=d: torch.stack([a, b], d), {"dim": d})
        x = rng.normal((7, 4))
        w.add(f"split.{dtype}.size", "split", dtype, [Input(x)], lambda t: torch.split(t, 3, 0),
              {"size": 3, "dim": 0})
        w.add(f"split.{dtype}.sizes", "split", dtype, [Input(x)],
              lambda t: torch.split(t, [1, 0, 3], -1), {"sizes": [1, 0, 3], "dim": -1})
        for n, d in ((3, 0), (4, 1), (5, 1)):
            w.add(f"chunk.{dtype}.{n}.{d}", "chunk", dtype, [Input(x)],
                  lambda t, n=n, d=d: torch.chunk(t, n, d), {"chunks": n, "dim": d})
        x = rng.normal((4, 5))
        idx = torch.tensor([3, 0, 3, 1])
        for d in (0, 1, -1):
            w.add(f"index_select.{dtype}.{d}", "index_select", dtype, [Input(x), Input(idx)],
                  lambda t, i, d=d: torch.index_select(t, d, i), {"dim": d}, tol_grad=tol)
        gi = rng.ints((3, 5), 0, 4)
        w.add(f"gather.{dtype}.0", "gather", dtype, [Input(x), Input(gi)],
              lambda t, i: torch.gather(t, 0, i), {"dim": 0}, tol_grad=tol)
        gi1 = rng.ints((4, 2), 0, 5)
        w.add(f"gather.{dtype}.-1", "gather", dtype, [Input(x), Input(gi1)],
              lambda t, i: torch.gather(t, -1, i), {"dim": -1}, tol_grad=tol)
        src = rng.normal((3, 5))
        w.add(f"scatter_add.{dtype}.0", "scatter_add", dtype, [Input(x), Input(gi), Input(src)],
              lambda t, i, s: torch.scatter_add(t, 0, i, s), {"dim": 0}, tol_out=tol)
        w.add(f"one_hot.{dtype}", "one_hot", dtype, [Input(torch.tensor([[0, 3], [2, 2]]))],
              lambda i: F.one_hot(i, 5), {"n": 5})
        w.add(f"one_hot.{dtype}.infer", "one_hot", dtype, [Input(torch.tensor([1, 4, 0]))],
              lambda i: F.one_hot(i), {"n": -1})
        x3 = rng.normal((2, 3, 4))
        w.add(f"flip.{dtype}", "flip", dtype, [Input(x3)], lambda t: torch.flip(t, (0, -1)),
              {"dims": [0, -1]})
        for shift, d in ((1, 0), (-5, 2), (7, 1)):
            w.add(f"roll.{dtype}.{shift}.{d}", "roll", dtype, [Input(x3)],
                  lambda t, s=shift, d=d: torch.roll(t, s, d), {"shift": shift, "dim": d})
        for mode, pads in (("constant", [1, 2, 0, 1]), ("reflect", [2, 1, 1, 2]),
                           ("replicate", [3, 0, 2, 1]), ("circular", [2, 3, 1, 1])):
            w.add(f"pad.{dtype}.{mode}", "pad", dtype, [Input(x3)],
                  lambda t, m=mode, p=pads: F.pad(t, p, mode=m, value=0.5) if m == "constant"
                  else F.pad(t, p, mode=m), {"pads": pads, "mode": mode, "value": 0.5},
                  tol_grad=overlap_tol(dtype, contributions=12))
        w.add(f"repeat.{dtype}", "repeat", dtype, [Input(rng.normal((2, 3)))],
              lambda t: t.repeat(2, 1, 3), {"reps": [2, 1, 3]}, tol_grad=tol)
        for k in (-1, 0, 2):
            for name, fn in (("tril", torch.tril), ("triu", torch.triu)):
                w.add(f"{name}.{dtype}.{k}", name, dtype, [Input(x3)],
                      lambda t, fn=fn, k=k: fn(t, k), {"diagonal": k})
        for d in (0, -1):
            w.add(f"cumsum.{dtype}.{d}", "cumsum", dtype, [Input(x3)],
                  lambda t, d=d: torch.cumsum(t, d), {"dim": d}, tol_out=tol, tol_grad=tol)
        s = torch.tensor([[3.0, -1.0, NAN, 2.0, -0.0, 2.0, 0.0, INF],
                          [1.0, 1.0, 1.0, -INF, 5.0, -2.0, 1.0, 0.0]], dtype=torch.float64)
        for desc in (False, True):
            w.add(f"sort.{dtype}.{desc}", "sort", dtype, [Input(s)],
                  lambda t, d=desc: torch.sort(t, dim=-1, descending=d, stable=True), {"dim": -1,
                                                                       "descending": desc})
            w.add(f"argsort.{dtype}.{desc}", "argsort", dtype, [Input(s, grad=False)],
                  lambda t, d=desc: torch.argsort(t, dim=-1, descending=d, stable=True),
                  {"dim": -1, "descending": desc})
        w.add(f"sort.{dtype}.dim0", "sort", dtype, [Input(x3)], lambda t: torch.sort(t, 0),
              {"dim": 0, "descending": False})
        t = torch.tensor([[3.0, 1.0, 3.5, 2.0, 1.5, 5.0], [0.0, 0.5, -1.0, 4.0, 4.5, 3.0]],
                         dtype=torch.float64)
        for k, largest in ((2, True), (3, False), (6, True)):
            w.add(f"topk.{dtype}.{k}.{largest}", "topk", dtype, [Input(t)],
                  lambda v, k=k, l=largest: torch.topk(v, k, -1, l), {"k": k, "dim": -1,
                                                                      "largest": largest})
        # Ties: PyTorch does not say which of equal values comes first (its CPU kernel's partial
        # sort); ember takes the lower index first. A kept difference.
        t = torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0, 5.0], [0.0, 0.0, -1.0, 4.0, 4.0, 4.0]],
                         dtype=torch.float64)
        w.add(f"topk.{dtype}.ties", "topk", dtype, [Input(t)], lambda v: torch.topk(v, 6, -1),
              {"k": 6, "dim": -1, "largest": True})
        x, y = rng.normal((2, 3, 4)), rng.normal((2, 4, 5))
        for eq, ops in (("bij,bjk->bik", [x, y]), ("...ij,...jk->...ik", [x, y]),
                        ("bij->bji", [x]), ("bij->", [x]), ("ii->i", [rng.normal((4, 4))]),
                        ("ii", [rng.normal((3, 3))]), ("i,j->ij", [rng.normal((3,)), rng.normal((4,))]),
                        ("ij,jk,kl->il", [rng.normal((2, 3)), rng.normal((3, 4)), rng.normal((4, 2))])):
            w.add(f"einsum.{dtype}.{eq}", "einsum", dtype, [Input(o) for o in ops],
                  lambda *t, eq=eq: torch.einsum(eq, *t), {"equation": eq}, tol_out=tol,
                  tol_grad=tol)


def main():
    warnings.filterwarnings("ignore", "var\\(\\): degrees of freedom")  # var.one: NaN on purpose
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    for group, build in (("elementwise", elementwise), ("reductions", reductions),
                         ("operators", operators), ("indexing", indexing)):
        w = Writer(group)
        build(w)
        w.save()


if __name__ == "__main__":
    main()
