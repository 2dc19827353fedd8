#!/usr/bin/env python3
"""PyTorch peers of bench_elementwise_cpu's chains and bench_autograd_cpu's 8-op chain, on the
CPU: the same expressions, dtypes and element counts, in eager mode and under torch.compile
(Inductor's C++ backend), with the thread count ember uses (OMP_NUM_THREADS).

  --suite elementwise   chain_tanh_<dt>, chain_relu_<dt>: y = act(a*b + c) * 0.5 + a*c into a y
                        allocated once (eager: the last op writes y with out=; compiled:
                        y.copy_(...), which Inductor writes in place), f32 and bf16
  --suite autograd      autograd_bwd_<dt>: y.backward(g) alone (the forward runs untimed before
                        it); autograd_fwdbwd_<dt>: gradients set to None, forward, backward; the
                        chain tanh(a*b + c) * sigmoid(a - c) + exp(b), f32 and bf16

Variants are torch_eager and torch_compile. Each repetition runs the call for at least
--min-time seconds and records the mean time of one call; the JSON has Google Benchmark's shape
(benchmarks[] with run_name, run_type "iteration", real_time in us, bytes_per_iter, counting the
same bytes as ember's benchmarks), so bench/report.py reads it beside ember's results and adds
the "vs torch" columns. Results are checked against a float64 computation of the same chain.

  python3 bench/torch_cpu_peer.py --suite elementwise --json out.json [--reps 5] [--min-time 0.3]
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
except ImportError:  # --help works without torch
    torch = None

SIZES = [1 << 16, 1 << 20, 1 << 24]  # bench_support.hpp's kSizes


def timed_reps(fn, reps, min_time, setup=None):
    """Mean seconds of one call, per repetition; setup() runs untimed before each call."""
    out = []
    for _ in range(reps):
        total, calls = 0.0, 0
        while total < min_time or calls < 3:
            if setup:
                setup()
            t0 = time.perf_counter()
            fn()
            total += time.perf_counter() - t0
            calls += 1
        out.append(total / calls)
    return out


def record(records, name, seconds, bytes_per_iter, n, error=None):
    for t in seconds:
        r = {"name": name, "run_name": name, "run_type": "iteration", "real_time": t * 1e6,
             "cpu_time": t * 1e6, "time_unit": "us", "bytes_per_iter": float(bytes_per_iter),
             "elements": float(n), "others_cpu": 0.0}
        if error:
            r.update(error_occurred=True, error_message=error)
        records.append(r)


def inputs(n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, generator=g) * 2 - 1).to(dtype) for _ in range(3)]


def check(got, want, dtype):
    """None when got matches the float64 value within the dtype's tolerance, else a sentence."""
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-5
    err = ((got.double() - want).abs() / (1 + want.abs())).max().item()
    return None if err <= tol else f"wrong result: relative error {err:.3g} > {tol}"


def elementwise(records, reps, min_time, compile_):
    for dtype, dt in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        for act_name, act in (("tanh", torch.tanh), ("relu", torch.relu)):
            def eager(a, b, c, y):
                torch.add(act(a * b + c) * 0.5, a * c, out=y)

            def inplace(a, b, c, y):
                y.copy_(act(a * b + c) * 0.5 + a * c)

            variants = [("torch_eager", eager)]
            if compile_:
                variants.append(("torch_compile", torch.compile(inplace, dynamic=False)))
            for n in SIZES:
                a, b, c = inputs(n, dtype)
                y = torch.empty(n, dtype=dtype)
                want = act(a.double() * b.double() + c.double()) * 0.5 + a.double() * c.double()
                for impl, fn in variants:
                    name = f"chain_{act_name}_{dt}/{impl}/{n}"
                    fn(a, b, c, y)  # compiles, warms up
                    error = check(y, want, dtype)
                    secs = timed_reps(lambda: fn(a, b, c, y), reps, min_time)
                    record(records, name, secs, 4 * n * a.element_size(), n, error)
                    print(f"{name}: {min(secs) * 1e6:.1f} us" + (f" ({error})" if error else ""),
                          file=sys.stderr)


def chain8(a, b, c):
    return torch.tanh(a * b + c) * torch.sigmoid(a - c) + torch.exp(b)


def autograd(records, reps, min_time, compile_):
    for dtype, dt in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        variants = [("torch_eager", chain8)]
        if compile_:
            variants.append(("torch_compile", torch.compile(chain8, dynamic=False)))
        for n in SIZES:
            a, b, c = (x.requires_grad_() for x in inputs(n, dtype))
            g = inputs(n, dtype, seed=1)[0]
            # float64 gradients of the same chain, for the check
            ad, bd, cd = (x.detach().double().requires_grad_() for x in (a, b, c))
            chain8(ad, bd, cd).backward(g.double())
            for impl, fn in variants:
                state = {}

                def zero():
                    a.grad = b.grad = c.grad = None

                def forward():
                    zero()
                    state["y"] = fn(a, b, c)

                def backward():
                    state["y"].backward(g)

                def step():
                    zero()
                    fn(a, b, c).backward(g)

                step()  # compiles forward and backward, warms up
                errors = [check(x.grad, w.grad, dtype) for x, w in ((a, ad), (b, bd), (c, cd))]
                error = next((e for e in errors if e), None)
                bwd = timed_reps(backward, reps, min_time, setup=forward)
                record(records, f"autograd_bwd_{dt}/{impl}/{n}", bwd, 7 * n * a.element_size(), n,
                       error)
                fb = timed_reps(step, reps, min_time)
                record(records, f"autograd_fwdbwd_{dt}/{impl}/{n}", fb,
                       11 * n * a.element_size(), n, error)
                print(f"autograd_{dt}/{impl}/{n}: bwd {min(bwd) * 1e6:.1f} us, fwdbwd "
                      f"{min(fb) * 1e6:.1f} us" + (f" ({error})" if error else ""),
                      file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["elementwise", "autograd"], required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    args = ap.parse_args()
    if torch is None:
        sys.exit("torch_cpu_peer.py: PyTorch is not installed (pip install torch)")
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count()))
    torch.set_num_threads(threads)
    records = []
    with torch.no_grad() if args.suite == "elementwise" else torch.enable_grad():
        (elementwise if args.suite == "elementwise" else autograd)(
            records, args.reps, args.min_time, not args.no_compile)
    doc = {"peer": {"library": "torch", "version": torch.__version__, "threads": threads,
                    "suite": args.suite},
           "benchmarks": records}
    with open(args.json, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", args.json, file=sys.stderr)


if __name__ == "__main__":
    main()
