#!/usr/bin/env python3
"""bench/attention/attention.cpp's cases in PyTorch: torch.nn.functional.scaled_dot_product_attention
on the CPU (its flash backend), timed the same way (the median of at least three calls and a
second after one warm-up).

    attention_torch.py [--max-length T] [--min-seconds s] [--threads N]   prints one JSON object
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

B, H, D = 4, 8, 64
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def median_ms(fn, min_seconds):
    fn()
    ms, start = [], time.perf_counter()
    while len(ms) < 3 or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-length", type=int, default=4096)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    out = {}
    for name, dtype in DTYPES.items():
        for t in (512, 1024, 2048, 4096):
            if t > args.max_length:
                continue
            for causal in (0, 1):
                q, k, v, g = (torch.randn(B, H, t, D, dtype=dtype) for _ in range(4))

                def fwd():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

                def fwd_bwd():
                    qv, kv, vv = (x.detach().requires_grad_() for x in (q, k, v))
                    F.scaled_dot_product_attention(qv, kv, vv, is_causal=bool(causal)).backward(g)

                out[f"{name}/T{t}/causal{causal}/fwd"] = round(median_ms(fwd, args.min_seconds), 3)
                out[f"{name}/T{t}/causal{causal}/fwd_bwd"] = round(median_ms(fwd_bwd, args.min_seconds), 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
