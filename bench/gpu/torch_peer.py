#!/usr/bin/env python3
"""PyTorch peers of bench/gpu/bench_elementwise_gpu.cu: the same expressions, dtypes and sizes,
in eager mode and under torch.compile, timed with CUDA events (median of N after warm-up; the
compiled functions are compiled and warmed up before timing).

  chain_tanh_bf16   tanh(a*b + c) * 0.5 + a*c                    bf16, 2^29 elements
  chain_relu_bf16   relu(a*b + c) * 0.5 + a*c
  copy_bf16         y.copy_(a)
  bias_add_bf16     a + bias over [n/1024, 1024] with a [1024] bias (a broadcast, strided pass)
  softmax_bf16      the expression ember runs (float compute: max, exp, sum, divide), and
                    F.softmax as the built-in kernel (torch_eager_builtin)
  layernorm_bf16    (x - mean) * rsqrt(var + eps) * gamma + beta in float, and F.layer_norm

With --suite autograd, the peers of bench/gpu/bench_autograd_gpu.cu: PyTorch autograd on the
8-op chain tanh(a*b + c) * sigmoid(a - c) + exp(b), f32 and bf16, 2^28 elements:

  autograd_bwd_<dt>     y.backward(g) alone (the forward runs before the start event)
  autograd_fwdbwd_<dt>  grads set to None, forward, backward
  torch_eager           one kernel per op forward and backward, saved activations in memory
  torch_compile         AOTAutograd + Inductor: fused forward and fused backward kernels

With --suite ops, the peers of bench/gpu/bench_ops_gpu.cu (bf16, the same shapes):

  op_matmul_bf16        x @ w.t()                                   torch_eager
  op_linear_gelu_bf16   F.gelu(F.linear(x, w, b), approximate="tanh") (cuBLASLt's GELU epilogue
                        is the tanh form)                           torch_eager, torch_compile
  op_ffn_fwdbwd_bf16    F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2) and its
                        backward (x and the parameters' gradients)  torch_eager, torch_compile
  op_conv2d_fwd_bf16    F.conv2d, x and w channels_last, under autocast(bfloat16)
  op_conv2d_bwd_bf16    aten.convolution_backward for dx and dw (what autograd calls)
                        torch_eager (cudnn.benchmark off: cuDNN's heuristic choice, as ember),
                        torch_eager_cudnn_benchmark (cudnn.benchmark on: measured choice)
  op_softmax_bf16       F.softmax(x, -1)                            torch_eager, torch_compile
  op_layernorm_bf16     F.layer_norm(x, (cols,), w, b, 1e-5)        torch_eager, torch_compile
  op_add_layernorm_bf16 F.layer_norm(x + r, (cols,), w, b, 1e-5)    torch_eager, torch_compile

Records carry "flops" where the work is counted in FLOPs (2 M N K; conv2d 2 N O OH OW C KH KW,
backward twice that).

Writes JSON records (bench, shape, impl, ms, ...) that bench/gpu/summarize.py joins with
ember's. Usage: torch_peer.py [--json out.json] [--reps N] [--quick] [--no-compile]
                              [--suite elementwise|autograd|ops|all]
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


def time_it(bench, shape, impl, nbytes, fn, warmup=3, reps=20, setup=None, flops=0.0):
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
    rate = f"{nbytes / rec['ms'] / 1e6:8.1f} GB/s"
    if flops:
        rec["flops"] = flops
        rate = f"{flops / rec['ms'] / 1e9:7.1f} TFLOP/s"
    print(f"{bench:<18} {shape:<14} {impl:<22} {rec['ms']:9.3f} ms  "
          f"{rate}  (min {ms[0]:.3f}, max {ms[-1]:.3f})", flush=True)
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
    rows, cols = n // 1024, 1024
    a2, bias, y2 = a[:rows * cols].view(rows, cols), b[:cols], y[:rows * cols].view(rows, cols)
    time_it("bias_add_bf16", f"{rows}x{cols}", "torch_eager", 2 * rows * cols * el,
            lambda: torch.add(a2, bias, out=y2), reps=reps)
    del a, b, c, y, a2, bias, y2
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


# ---- ops: the peers of bench_ops_gpu.cu ----
def linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def normwise(got, want, tol):
    """'ok' when max |got - want| <= tol * max |want| (for sums that cancel: convolution gradients)."""
    err = ((got.double() - want.double()).abs().max() / want.double().abs().max().clamp_min(1e-30)).item()
    return "ok" if err <= tol else f"FAIL: error {err:.3g} > {tol:.3g}"


def run_ops_linear(M, N, K, use_compile, reps):
    dev = "cuda"
    shape = f"{M}x{N}x{K}"
    g = torch.Generator(device=dev).manual_seed(1)
    x = torch.randn(M, K, device=dev, generator=g).to(torch.bfloat16)
    w = (torch.randn(N, K, device=dev, generator=g) / K ** 0.5).to(torch.bfloat16)
    b = (0.5 * torch.randn(N, device=dev, generator=g)).to(torch.bfloat16)
    flops = 2.0 * M * N * K
    nbytes = 2.0 * (M * K + N * K + M * N)
    rows = torch.linspace(0, M - 1, 16, device=dev).long()
    pre = x[rows].double() @ w.double().t()

    rec = time_it("op_matmul_bf16", shape, "torch_eager", nbytes, lambda: x @ w.t(), reps=reps, flops=flops)
    rec["check"] = close((x @ w.t())[rows], pre, 2e-2, atol=1.0)
    want = F.gelu(pre + b.double(), approximate="tanh")
    rec = time_it("op_linear_gelu_bf16", shape, "torch_eager", nbytes + 2 * N, lambda: linear_gelu(x, w, b),
                  reps=reps, flops=flops)
    rec["check"] = close(linear_gelu(x, w, b)[rows], want, 2e-2, atol=1.0)
    save()
    cfn = compile_fn(linear_gelu, use_compile)
    if cfn is not None and warm_compiled(f"op_linear_gelu_bf16 {shape}", cfn, x, w, b) is not None:
        rec = time_it("op_linear_gelu_bf16", shape, "torch_compile", nbytes + 2 * N, lambda: cfn(x, w, b),
                      reps=reps, flops=flops)
        rec["check"] = close(cfn(x, w, b)[rows], want, 2e-2, atol=1.0)
        save()
    del x, w, b
    torch.cuda.empty_cache()


def ffn(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1), approximate="tanh"), w2, b2)


def run_ops_ffn(M, H, Fw, use_compile, reps):
    """A feed-forward block's forward and backward (bench_ops_gpu.cu's op_ffn_fwdbwd_bf16)."""
    dev = "cuda"
    shape = f"{M}x{H}x{Fw}"
    gen = torch.Generator(device=dev).manual_seed(2)
    x = torch.randn(M, H, device=dev, generator=gen).to(torch.bfloat16).requires_grad_()
    w1 = (torch.randn(Fw, H, device=dev, generator=gen) / H ** 0.5).to(torch.bfloat16).requires_grad_()
    b1 = (0.5 * torch.randn(Fw, device=dev, generator=gen)).to(torch.bfloat16).requires_grad_()
    w2 = (torch.randn(H, Fw, device=dev, generator=gen) / Fw ** 0.5).to(torch.bfloat16).requires_grad_()
    b2 = (0.5 * torch.randn(H, device=dev, generator=gen)).to(torch.bfloat16).requires_grad_()
    g = torch.randn(M, H, device=dev, generator=gen).to(torch.bfloat16)
    params = (x, w1, b1, w2, b2)
    flops = 12.0 * M * H * Fw
    nbytes = 2.0 * (6 * M * H + 4 * Fw * H + 5 * M * Fw)

    def clear():
        for p in params:
            p.grad = None

    rows = torch.linspace(0, M - 1, 16, device=dev).long()
    xd, w1d, b1d, w2d, b2d = (p.detach().double() for p in params)
    xr = xd[rows].requires_grad_()
    ffn(xr, w1d, b1d, w2d, b2d).backward(g[rows].double())
    want = xr.grad

    for impl, fn in (("torch_eager", ffn), ("torch_compile", compile_fn(ffn, use_compile))):
        if fn is None:
            continue
        if impl == "torch_compile":
            clear()
            if warm_compiled(f"op_ffn_fwdbwd_bf16 {shape}", lambda: fn(*params).backward(g)) is None:
                continue
        rec = time_it("op_ffn_fwdbwd_bf16", shape, impl, nbytes, lambda: fn(*params).backward(g),
                      reps=reps, setup=clear, flops=flops)
        clear()
        fn(*params).backward(g)
        rec["check"] = close(x.grad[rows], want, 2e-2, atol=1.0)
        save()
    del params, x, w1, b1, w2, b2, g
    torch.cuda.empty_cache()


def run_ops_conv(label, N, C, H, W, O, k, stride, pad, reps):
    dev = "cuda"
    cl = torch.channels_last
    OH, OW = (H + 2 * pad - k) // stride + 1, (W + 2 * pad - k) // stride + 1
    shape = f"{label}_n{N}_c{C}_{H}x{W}_o{O}_k{k}s{stride}"
    g = torch.Generator(device=dev).manual_seed(4)
    x = torch.randn(N, C, H, W, device=dev, generator=g).to(torch.bfloat16).contiguous(memory_format=cl)
    w = (torch.randn(O, C, k, k, device=dev, generator=g) / (C * k * k) ** 0.5).to(torch.bfloat16)
    w = w.contiguous(memory_format=cl)
    dy = torch.randn(N, O, OH, OW, device=dev, generator=g).to(torch.bfloat16).contiguous(memory_format=cl)
    flops = 2.0 * N * O * OH * OW * C * k * k
    xb, wb, yb = 2.0 * x.numel(), 2.0 * w.numel(), 2.0 * N * O * OH * OW
    st, pd = [stride, stride], [pad, pad]

    def fwd():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return F.conv2d(x, w, None, st, pd)

    def bwd():
        return torch.ops.aten.convolution_backward(dy, x, w, None, st, pd, [1, 1], False, [0, 0], 1,
                                                   [True, True, False])

    # float64 references (NCHW: double convolutions have no channels-last kernels): the forward on
    # the first two images, both gradients on the whole batch.
    xd, wd, dyd = (t.double().contiguous() for t in (x, w, dy))
    ref_y = F.conv2d(xd[:2], wd, None, st, pd)
    ref_dx, ref_dw, _ = torch.ops.aten.convolution_backward(dyd, xd, wd, None, st, pd, [1, 1], False, [0, 0], 1,
                                                            [True, True, False])
    del xd, wd, dyd
    saved = torch.backends.cudnn.benchmark
    try:
        for impl, bench_mode in (("torch_eager", False), ("torch_eager_cudnn_benchmark", True)):
            torch.backends.cudnn.benchmark = bench_mode
            rec = time_it("op_conv2d_fwd_bf16", shape, impl, xb + wb + yb, fwd, reps=reps, flops=flops)
            rec["check"] = normwise(fwd()[:2], ref_y, 2e-2)
            rec = time_it("op_conv2d_bwd_bf16", shape, impl, xb + wb + 2 * yb, bwd, reps=reps, flops=2 * flops)
            dx, dw, _ = bwd()
            rec["check"] = normwise(dx, ref_dx, 2e-2)
            if rec["check"] == "ok":
                rec["check"] = normwise(dw, ref_dw, 2e-2)
            save()
    finally:
        torch.backends.cudnn.benchmark = saved
    del x, w, dy, ref_y, ref_dx, ref_dw
    torch.cuda.empty_cache()


def run_ops_rows(rows, cols, use_compile, reps):
    dev = "cuda"
    shape = f"{rows}x{cols}"
    g = torch.Generator(device=dev).manual_seed(7)
    x = (2.0 * torch.randn(rows, cols, device=dev, generator=g)).to(torch.bfloat16)
    w = (0.5 + torch.rand(cols, device=dev, generator=g)).to(torch.bfloat16)
    b = (0.1 * torch.randn(cols, device=dev, generator=g)).to(torch.bfloat16)
    nbytes = 2 * rows * cols * x.element_size()
    ref_rows = torch.linspace(0, rows - 1, 64, device=dev).long()

    def softmax(t):
        return F.softmax(t, dim=-1)

    def layernorm(t, w, b):
        return F.layer_norm(t, (cols,), w, b, EPS)

    want = torch.softmax(x[ref_rows].double(), -1)
    rec = time_it("op_softmax_bf16", shape, "torch_eager", nbytes, lambda: softmax(x), reps=reps)
    rec["check"] = close(softmax(x)[ref_rows], want, 1e-2, atol=1e-30)
    cfn = compile_fn(softmax, use_compile)
    if cfn is not None and warm_compiled(f"op_softmax_bf16 {shape}", cfn, x) is not None:
        rec = time_it("op_softmax_bf16", shape, "torch_compile", nbytes, lambda: cfn(x), reps=reps)
        rec["check"] = close(cfn(x)[ref_rows], want, 1e-2, atol=1e-30)
    save()

    nb = nbytes + 4 * cols
    want = F.layer_norm(x[ref_rows].double(), (cols,), w.double(), b.double(), EPS)
    rec = time_it("op_layernorm_bf16", shape, "torch_eager", nb, lambda: layernorm(x, w, b), reps=reps)
    rec["check"] = close(layernorm(x, w, b)[ref_rows], want, 1e-2, atol=1.0)
    cfn = compile_fn(layernorm, use_compile)
    if cfn is not None and warm_compiled(f"op_layernorm_bf16 {shape}", cfn, x, w, b) is not None:
        rec = time_it("op_layernorm_bf16", shape, "torch_compile", nb, lambda: cfn(x, w, b), reps=reps)
        rec["check"] = close(cfn(x, w, b)[ref_rows], want, 1e-2, atol=1.0)
    save()

    # add + layer norm with a residual of zeros (ember's check needs the plain reference).
    def add_layernorm(t, r, w, b):
        return F.layer_norm(t + r, (cols,), w, b, EPS)

    r = torch.zeros_like(x)
    nb = 2 * nbytes + 4 * cols
    rec = time_it("op_add_layernorm_bf16", shape, "torch_eager", nb, lambda: add_layernorm(x, r, w, b), reps=reps)
    rec["check"] = close(add_layernorm(x, r, w, b)[ref_rows], want, 1e-2, atol=1.0)
    cfn = compile_fn(add_layernorm, use_compile)
    if cfn is not None and warm_compiled(f"op_add_layernorm_bf16 {shape}", cfn, x, r, w, b) is not None:
        rec = time_it("op_add_layernorm_bf16", shape, "torch_compile", nb, lambda: cfn(x, r, w, b), reps=reps)
        rec["check"] = close(cfn(x, r, w, b)[ref_rows], want, 1e-2, atol=1.0)
    save()
    del x, r
    torch.cuda.empty_cache()


def run_ops(use_compile, reps, quick):
    """The shapes of bench_ops_gpu.cu (its --quick ones with quick)."""
    gemms = [(1024, 1024, 1024)] if quick else [(8192, 8192, 8192), (4096, 3072, 768), (4096, 768, 3072),
                                               (4096, 768, 768)]
    for M, N, K in gemms:
        run_ops_linear(M, N, K, use_compile, reps)
    run_ops_ffn(512 if quick else 4096, 768, 3072, use_compile, reps)
    n = 8 if quick else 256
    for label, C, H, O, k, stride, pad in (("stem", 3, 224, 64, 7, 2, 3), ("res2_3x3", 64, 56, 64, 3, 1, 1),
                                           ("res3_3x3", 128, 28, 128, 3, 1, 1), ("res4_3x3", 256, 14, 256, 3, 1, 1),
                                           ("res5_3x3", 512, 7, 512, 3, 1, 1), ("res2_1x1", 64, 56, 256, 1, 1, 0),
                                           ("res4_1x1", 1024, 14, 256, 1, 1, 0)):
        run_ops_conv(label, n, C, H, H, O, k, stride, pad, reps)
    run_ops_rows(1024 if quick else 4096 * 12, 128, use_compile, reps)
    run_ops_rows(1024 if quick else 4096, 768, use_compile, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test of this script")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument("--suite", choices=["elementwise", "autograd", "ops", "all"], default="elementwise",
                    help="elementwise: bench_elementwise_gpu's peers (default); autograd: "
                         "bench_autograd_gpu's; ops: bench_ops_gpu's; all: the three")
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
        if args.suite in ("ops", "all"):
            run_ops(use_compile, args.reps, args.quick)
    except Exception as e:
        print(f"torch_peer.py: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        status = 1
    save()
    if any(r["check"] != "ok" for r in records):
        status = status or 4
    return status


if __name__ == "__main__":
    sys.exit(main())
