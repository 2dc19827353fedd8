#!/usr/bin/env python3
"""PyTorch peers of bench/gpu/bench_elementwise_gpu.cu: the same expressions, dtypes and sizes,
in eager mode and under torch.compile, timed with CUDA events (median of N after warm-up; the
compiled functions are compiled and warmed up before timing).

  chain_tanh_bf16   tanh(a*b + c) * 0.5 + a*c                    bf16, 2^29 elements
  chain_relu_bf16   relu(a*b + c) * 0.5 + a*c
  copy_bf16         y.copy_(a)
  softmax_bf16      the expression ember runs (float compute: max, exp, sum, divide), and
                    F.softmax as the built-in kernel (torch_eager_builtin)
  layernorm_bf16    (x - mean) * rsqrt(var + eps) * gamma + beta in float, and F.layer_norm

With --suite autograd, the peers of bench/gpu/bench_autograd_gpu.cu: PyTorch autograd on the
8-op chain tanh(a*b + c) * sigmoid(a - c) + exp(b), f32 and bf16, 2^28 elements:

  autograd_bwd_<dt>     y.backward(g) alone (the forward runs before the start event)
  autograd_fwdbwd_<dt>  grads set to None, forward, backward
  torch_eager           one kernel per op forward and backward, saved activations in memory
  torch_compile         AOTAutograd + Inductor: fused forward and fused backward kernels

Writes JSON records (bench, shape, impl, ms, ...) that bench/gpu/summarize.py joins with
ember's. Usage: torch_peer.py [--json out.json] [--reps N] [--quick] [--no-compile]
                              [--suite elementwise|autograd|all]
"""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --help works without torch; main() says what is missing
    torch = F = None

EPS = 1e-5
records = []
json_path = None
meta = {}


def save():
    """Rewrites the JSON after every record, so a run cut short still leaves its numbers."""
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"source": "torch", **meta, "records": records}, f, indent=1)


def time_it(bench, shape, impl, nbytes, fn, warmup=3, reps=20, setup=None):
    """Median of `reps` CUDA-event-timed calls of fn; setup() runs before each start event."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        if setup:
            setup()
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    rec = {"bench": bench, "shape": shape, "impl": impl, "ms": statistics.median(ms),
           "ms_min": ms[0], "ms_max": ms[-1], "bytes": nbytes, "reps": reps, "check": "ok"}
    print(f"{bench:<18} {shape:<14} {impl:<22} {rec['ms']:9.3f} ms  "
          f"{nbytes / rec['ms'] / 1e6:8.1f} GB/s  (min {ms[0]:.3f}, max {ms[-1]:.3f})", flush=True)
    records.append(rec)
    save()
    return rec


def compile_fn(fn, enabled):
    if not enabled:
        return None
    return torch.compile(fn, fullgraph=True, dynamic=False)


def warm_compiled(name, cfn, *args):
    """Compiles (first call) and warms up; returns the compile time in seconds or None on failure."""
    t0 = time.perf_counter()
    try:
        for _ in range(3):
            cfn(*args)
        torch.cuda.synchronize()
    except Exception as e:  # a broken inductor must not lose the eager numbers
        print(f"torch.compile failed for {name}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        return None
    dt = time.perf_counter() - t0
    print(f"compiled {name} in {dt:.1f} s", flush=True)
    return dt


def close(got, want, tol, atol=1e-2):
    """'ok' when max |got - want| / (atol + |want|) <= tol (NaN fails)."""
    err = ((got.double() - want.double()).abs() / (atol + want.double().abs())).max().item()
    return "ok" if err <= tol else f"FAIL: error {err:.3g} > {tol:.3g}"


# ---- the expressions (the same trees ember evaluates) ----
def chain_tanh(a, b, c):
    return torch.tanh(a * b + c) * 0.5 + a * c


def chain_relu(a, b, c):
    return torch.relu(a * b + c) * 0.5 + a * c


def softmax_expr(x):
    xf = x.float()
    m = xf.amax(-1, keepdim=True)
    s = torch.exp(xf - m).sum(-1, keepdim=True)
    return (torch.exp(xf - m) / s).to(torch.bfloat16)


def layernorm_expr(x, gamma, beta):
    xf = x.float()
    mu = xf.mean(-1, keepdim=True)
    var = xf.var(-1, keepdim=True, correction=0)
    return ((xf - mu) * torch.rsqrt(var + EPS) * gamma + beta).to(torch.bfloat16)


def run_elementwise(n, use_compile, reps):
    dev = "cuda"
    shape = str(n)
    g = torch.Generator(device=dev).manual_seed(1)
    a, b, c = (torch.randn(n, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(3))
    y = torch.empty_like(a)
    el = a.element_size()
    time_it("copy_bf16", shape, "torch_copy", 2 * n * el, lambda: y.copy_(a), reps=reps)
    for bench, fn in (("chain_tanh_bf16", chain_tanh), ("chain_relu_bf16", chain_relu)):
        time_it(bench, shape, "torch_eager", 4 * n * el, lambda: fn(a, b, c), reps=reps)
        cfn = compile_fn(fn, use_compile)
        if cfn is not None and warm_compiled(bench, cfn, a, b, c) is not None:
            rec = time_it(bench, shape, "torch_compile", 4 * n * el, lambda: cfn(a, b, c), reps=reps)
            k = min(n, 1 << 24)
            ref = fn(a[:k].float(), b[:k].float(), c[:k].float())
            rec["check"] = close(cfn(a, b, c)[:k], ref, 1e-2)
            save()
    del a, b, c, y
    torch.cuda.empty_cache()


def run_rows(rows, cols, use_compile, reps):
    dev = "cuda"
    shape = f"{rows}x{cols}"
    g = torch.Generator(device=dev).manual_seed(7)
    x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16, generator=g) * 2.0
    gamma = (1.0 + 0.1 * torch.randn(cols, device=dev, generator=g)).to(torch.bfloat16)
    beta = (0.1 * torch.randn(cols, device=dev, generator=g)).to(torch.bfloat16)
    nbytes = 2 * rows * cols * x.element_size()
    ref_rows = slice(0, min(rows, 256))

    time_it("softmax_bf16", shape, "torch_eager", nbytes, lambda: softmax_expr(x), reps=reps)
    time_it("softmax_bf16", shape, "torch_eager_builtin", nbytes, lambda: F.softmax(x, dim=-1), reps=reps)
    cfn = compile_fn(softmax_expr, use_compile)
    if cfn is not None and warm_compiled("softmax_bf16", cfn, x) is not None:
        rec = time_it("softmax_bf16", shape, "torch_compile", nbytes, lambda: cfn(x), reps=reps)
        rec["check"] = close(cfn(x)[ref_rows], torch.softmax(x[ref_rows].double(), -1), 2e-2, 1e-2 / cols)
        save()

    nb = nbytes + 4 * cols
    time_it("layernorm_bf16", shape, "torch_eager", nb, lambda: layernorm_expr(x, gamma, beta), reps=reps)
    time_it("layernorm_bf16", shape, "torch_eager_builtin", nb,
            lambda: F.layer_norm(x, (cols,), gamma, beta, EPS), reps=reps)
    cfn = compile_fn(layernorm_expr, use_compile)
    if cfn is not None and warm_compiled("layernorm_bf16", cfn, x, gamma, beta) is not None:
        rec = time_it("layernorm_bf16", shape, "torch_compile", nb, lambda: cfn(x, gamma, beta), reps=reps)
        xr = x[ref_rows].double()
        want = F.layer_norm(xr, (cols,), gamma.double(), beta.double(), EPS)
        rec["check"] = close(cfn(x, gamma, beta)[ref_rows], want, 2e-2)
        save()
    del x
    torch.cuda.empty_cache()


# ---- autograd: the 8-op chain of bench_autograd_gpu.cu ----
def chain8(a, b, c):
    return torch.tanh(a * b + c) * torch.sigmoid(a - c) + torch.exp(b)


def chain8_grads_ref(a, b, c, up):
    """float64 gradients of chain8 at (a, b, c) for upstream gradient up (slices on the GPU)."""
    a, b, c = (t.detach().double().requires_grad_() for t in (a, b, c))
    chain8(a, b, c).backward(up.double())
    return a.grad, b.grad, c.grad


def run_autograd(n, use_compile, reps):
    dev = "cuda"
    shape = str(n)
    k = min(n, 1 << 20)
    for dt, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        gen = torch.Generator(device=dev).manual_seed(1)

        def uniform(lo, hi):
            return (torch.rand(n, device=dev, generator=gen) * (hi - lo) + lo).to(dtype)

        a, b, c = (uniform(-2.0, 2.0).requires_grad_() for _ in range(3))
        up = uniform(-1.0, 1.0)
        el = a.element_size()
        want = chain8_grads_ref(a[:k], b[:k], c[:k], up[:k])

        def zero():
            a.grad = b.grad = c.grad = None  # zero_grad(set_to_none=True)

        impls = [("torch_eager", chain8)]
        cfn = compile_fn(chain8, use_compile)
        if cfn is not None:
            impls.append(("torch_compile", cfn))
        for impl, fn in impls:
            state = {}

            def forward():
                zero()
                state["y"] = fn(a, b, c)

            def backward():
                state["y"].backward(up)

            def step():
                zero()
                fn(a, b, c).backward(up)

            if impl == "torch_compile":
                # The forward and backward graphs compile at the first forward and backward.
                t0 = time.perf_counter()
                try:
                    for _ in range(3):
                        step()
                    torch.cuda.synchronize()
                except Exception as e:  # a broken inductor must not lose the eager numbers
                    print(f"torch.compile failed for autograd_{dt}: {type(e).__name__}: {e}",
                          file=sys.stderr, flush=True)
                    continue
                print(f"compiled autograd_{dt} (forward and backward) in {time.perf_counter() - t0:.1f} s",
                      flush=True)
            tol = 1e-4 if dtype == torch.float32 else 6e-2  # bf16 eager rounds every intermediate
            for bench, nbytes, kwargs in ((f"autograd_bwd_{dt}", 7 * n * el, {"setup": forward}),
                                          (f"autograd_fwdbwd_{dt}", 11 * n * el, {})):
                timed = backward if kwargs else step
                rec = time_it(bench, shape, impl, nbytes, timed, reps=reps, **kwargs)
                step()  # one more step, checked: the first 2^20 gradient elements against float64
                rec["check"] = "ok"
                for got, ref in zip((a.grad, b.grad, c.grad), want):
                    verdict = close(got[:k], ref, tol, atol=1.0)
                    if verdict != "ok":
                        rec["check"] = verdict
                        break
                save()
            state.clear()
        del a, b, c, up, want
        torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test of this script")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--suite", choices=["elementwise", "autograd", "all"], default="elementwise",
                    help="elementwise: bench_elementwise_gpu's peers (default); autograd: "
                         "bench_autograd_gpu's; all: both")
    args = ap.parse_args()
    if torch is None:
        print("torch_peer.py: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_peer.py: no CUDA device visible to PyTorch", file=sys.stderr)
        return 3
    props = torch.cuda.get_device_properties(0)
    global json_path
    json_path = args.json
    meta.update({"torch": torch.__version__, "device": props.name})
    print(f"torch {torch.__version__} on {props.name}, {props.multi_processor_count} SMs", flush=True)
    use_compile = not args.no_compile
    status = 0
    try:
        if args.suite in ("elementwise", "all"):
            if args.quick:
                run_elementwise(1 << 22, use_compile, args.reps)
                run_rows(4096, 1024, use_compile, args.reps)
            else:
                run_elementwise(1 << 29, use_compile, args.reps)
                run_rows(1 << 19, 1024, use_compile, args.reps)
                run_rows(1 << 16, 8192, use_compile, args.reps)
        if args.suite in ("autograd", "all"):
            run_autograd(1 << 22 if args.quick else 1 << 28, use_compile, args.reps)
    except Exception as e:
        print(f"torch_peer.py: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        status = 1
    save()
    if any(r["check"] != "ok" for r in records):
        status = status or 4
    return status


if __name__ == "__main__":
    sys.exit(main())
