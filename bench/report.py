#!/usr/bin/env python3
"""Reads Google Benchmark JSON from bench_elementwise_cpu, bench_autograd_cpu and bench_ops_cpu
and prints the ratios the issues ask for.

Benchmark names are "<group>/<variant>/<elements>[/...]" (bench_ops_cpu: "<group>/<variant>/<case>",
the case a shape such as 1024x3072x768). For every chain group
(chain_<act>_<dtype>) and size it prints:
  fused/copy   ember_fused bandwidth over the STREAM-style copy (copy_<dtype>/omp_copy), and
               over the best copy measured (ember_copy, memcpy, omp_copy)   target >= 80 %
  vs Eigen     Eigen's time over ember_fused's (above 1: ember is faster)    target >= 1.0x
  vs op-by-op  ember_opbyop's time over ember_fused's                        target >= 3x
  vs torch     PyTorch eager's and torch.compile's times over ember_fused's, where a results
               file of bench/torch_cpu_peer.py is given too                  target >= 1.0x compile
and the same comparisons for the reductions (rowsum, softmax) against Eigen. For the autodiff
groups (autograd_bwd_<dtype>: the backward alone; autograd_fwdbwd_<dtype>: forward + backward)
it prints ember_fused's time and bandwidth, % of copy, ember_opbyop's time over ember_fused's
(above 1: the fused backward is faster), loop_omp's time over ember_fused's (the share of the
hand-written floor reached), the parallel passes one backward ran (counter bwd_launches), and
PyTorch's times over ember_fused's where the peer's file is given.
For the operator groups (op_<op>_<dtype>, from bench_ops_cpu) it prints, per case, each ember
variant against the group's peer (the one variant whose name does not start with "ember":
OpenBLAS called directly, im2col + OpenBLAS, an OpenMP loop): GFLOP/s (counter flops_per_iter)
for products and convolutions, GB/s for softmax and layer norm, and the ratio peer time / ember
time (1.00: ember adds nothing; below 1: ember is slower).

Bandwidth is bytes_per_iter (the fewest bytes that must cross memory) over the real time.
With repetitions, the median over repetitions is used (--stat min for the best run).

  python3 bench/report.py bench/results/cpu-*.json [--stat median|min|mean] [--markdown]
  python3 bench/report.py cpu-<stamp>.json cpu-torch-elementwise-<stamp>.json
"""
import argparse
import json
import statistics
import sys
from collections import defaultdict

TARGET_COPY = 0.80
TARGET_EIGEN = 1.0
TARGET_OPBYOP = 3.0
TARGET_TORCH_COMPILE = 1.0
TIME_SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(paths, stat, max_others, time_field=None):
    """{(group, variant, n): {"t": seconds, "bytes": bytes per iteration}} and the context."""
    runs = defaultdict(list)       # iteration runs, per key
    aggregates = defaultdict(dict)  # aggregate name -> value, per key
    errors = {}
    context = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        context = doc.get("context", context)  # the peer's files have none: ember's is kept
        field = time_field or ("cpu_time" if context.get("time_measure") == "process_cpu" else "real_time")
        if field == "cpu_time":
            max_others = float("inf")  # CPU time is not inflated by other processes: keep every run
        for b in doc.get("benchmarks", []):
            name = b.get("run_name") or b["name"]
            parts = name.split("/")
            if len(parts) < 3:
                continue
            try:
                key = (parts[0], parts[1], int(parts[2]))
            except ValueError:
                if not parts[0].startswith("op_") and not parts[0].startswith("copy_"):
                    continue
                key = (parts[0], parts[1], parts[2])  # bench_ops_cpu: a named case (a shape)
            if b.get("error_occurred"):
                errors[key] = b.get("error_message", "error")
                continue
            seconds = b[field] * TIME_SCALE[b.get("time_unit", "ns")]
            entry = {"t": seconds, "bytes": b.get("bytes_per_iter", 0.0), "others": b.get("others_cpu", 0.0),
                     "launches": b.get("bwd_launches"), "flops": b.get("flops_per_iter", 0.0)}
            if b.get("run_type") == "aggregate":
                aggregates[key][b.get("aggregate_name")] = entry
            else:
                runs[key].append(entry)
    out = {}
    for key in set(runs) | set(aggregates):
        if runs.get(key):
            # Repetitions during which other processes used the CPUs are dropped when clean ones exist.
            clean = [r for r in runs[key] if r["others"] <= max_others]
            used = clean or runs[key]
            times = [r["t"] for r in used]
            t = {"median": statistics.median, "min": min, "mean": statistics.fmean}[stat](times)
            spread = (max(times) - min(times)) / t if len(times) > 1 and t > 0 else 0.0
            out[key] = {"t": t, "bytes": used[0]["bytes"], "spread": spread, "used": len(used),
                        "total": len(runs[key]), "noisy": not clean,
                        "others": max(r["others"] for r in used), "launches": used[0]["launches"],
                        "flops": used[0]["flops"]}
        elif stat in aggregates[key]:
            a = aggregates[key][stat]
            out[key] = {"t": a["t"], "bytes": a["bytes"], "spread": float("nan"), "used": 0, "total": 0,
                        "noisy": False, "others": a.get("others", 0.0), "launches": a.get("launches"),
                        "flops": a.get("flops", 0.0)}
    return out, errors, context


def gbps(r):
    return r["bytes"] / r["t"] / 1e9 if r and r["t"] > 0 else float("nan")


def gflops(r):
    return r["flops"] / r["t"] / 1e9 if r and r.get("flops") and r["t"] > 0 else float("nan")


def fmt_time(t):
    if t < 1e-3:
        return f"{t * 1e6:8.1f} us"
    if t < 1.0:
        return f"{t * 1e3:8.2f} ms"
    return f"{t:8.3f} s "


def size_label(n):
    if isinstance(n, str):  # a named case (bench_ops_cpu)
        return n
    for shift in range(40, 9, -1):
        if n == 1 << shift:
            return f"2^{shift}"
    return str(n)


def fx(value, target=None):
    """A ratio as '1.23x', with the verdict against target when given; '-' when unknown."""
    if value != value:
        return "-"
    return f"{value:6.2f}x" + (verdict(value, target) if target else "")


def pct(value, target=None):
    if value != value:
        return "-"
    return f"{100 * value:5.0f}%" + (verdict(value, target) if target else "")


def verdict(value, target):
    if value != value:  # NaN
        return "  n/a"
    return " ok " if value >= target else " MISS"


class Table:
    def __init__(self, headers, markdown):
        self.headers, self.rows, self.markdown = headers, [], markdown

    def add(self, *cells):
        self.rows.append([str(c) for c in cells])

    def print(self):
        if self.markdown:
            print("| " + " | ".join(self.headers) + " |")
            print("|" + "|".join(" --- " for _ in self.headers) + "|")
            for r in self.rows:
                print("| " + " | ".join(c.strip() for c in r) + " |")
        else:
            widths = [max(len(h), *(len(r[i]) for r in self.rows)) if self.rows else len(h)
                      for i, h in enumerate(self.headers)]
            line = "  ".join(h.ljust(w) for h, w in zip(self.headers, widths))
            print(line)
            print("-" * len(line))
            for r in self.rows:
                print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--stat", choices=["median", "min", "mean"], default="median")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--summary-only", action="store_true", help="only the ratio tables")
    ap.add_argument("--time", choices=["real", "cpu"],
                    help="which time to use (default: cpu when the run measured process CPU time, "
                         "EMBER_BENCH_CPU_TIME=1, else real)")
    ap.add_argument("--max-others", type=float, default=0.10,
                    help="drop repetitions during which other processes used more than this share "
                         "of the CPUs (counter others_cpu; default 0.10)")
    args = ap.parse_args()

    res, errors, ctx = load(args.json, args.stat, args.max_others,
                            {"real": "real_time", "cpu": "cpu_time"}.get(args.time))
    if not res and not errors:
        sys.exit("report.py: no benchmarks in " + ", ".join(args.json))

    measure = args.time or ("cpu" if ctx.get("time_measure") == "process_cpu" else "real")
    print(f"# CPU benchmarks ({args.stat} of repetitions, {'process CPU' if measure == 'cpu' else 'wall-clock'} time)")
    keys = ["host_name", "num_cpus", "mhz_per_cpu", "omp_threads", "time_measure", "isa", "arch_flags", "compiler",
            "eigen_version", "blas", "mkl", "openblas", "openblas_core", "openblas_threads", "omp_wait_policy", "commit",
            "load_average", "busy_percent_before", "date"]
    if not args.summary_only:
        print("  " + ", ".join(f"{k}={ctx[k]}" for k in keys if k in ctx))
        caches = ctx.get("caches", [])
        if caches:
            print("  caches: " + ", ".join(f"L{c['level']} {c['type']} {c['size'] // 1024} KiB" for c in caches))
    print()

    groups = sorted({k[0] for k in res} | {k[0] for k in errors})
    # Element counts (ints) first, in order, then the named cases of bench_ops_cpu (strings).
    sizes = sorted({k[2] for k in res} | {k[2] for k in errors}, key=lambda n: (isinstance(n, str), n))
    any_flops = any(r.get("flops") for r in res.values())

    if not args.summary_only:
        # ---- every measurement ----
        t = Table(["benchmark", "elements", "time", "GB/s"] + (["GFLOP/s"] if any_flops else []) +
                  ["spread", "reps used", "others' CPU"], args.markdown)
        for g in groups:
            variants = sorted({k[1] for k in list(res) + list(errors) if k[0] == g})
            for v in variants:
                for n in sizes:
                    key = (g, v, n)
                    if key in errors:
                        t.add(f"{g}/{v}", size_label(n), "ERROR", errors[key][:40], *([""] * (4 + any_flops)))
                    elif key in res:
                        r = res[key]
                        spread = "" if r["spread"] != r["spread"] else f"{100 * r['spread']:.0f}%"
                        used = f"{r['used']}/{r['total']}" + (" NOISY" if r["noisy"] else "")
                        rate = [f"{gbps(r):7.2f}" if r["bytes"] else "-"]
                        if any_flops:
                            rate.append(f"{gflops(r):7.1f}" if r.get("flops") else "-")
                        t.add(f"{g}/{v}", size_label(n), fmt_time(r["t"]), *rate, spread, used,
                              f"{100 * r['others']:.0f}%")
        print(f"## All measurements (bandwidth = fewest bytes that must move / {measure} time)\n")
        if measure == "real":
            print(f"  reps used: repetitions during which other processes took <= {100 * args.max_others:.0f}% "
                  "of the CPUs (NOISY: none did, all used)\n")
        else:
            print("  process CPU time: every repetition is used; others' CPU is for information\n")
        t.print()

    # ---- chain ratios ----
    def get(g, v, n):
        return res.get((g, v, n))

    def best_copy(dtype, n):
        cands = [get(f"copy_{dtype}", v, n) for v in ("omp_copy", "memcpy", "ember_copy")]
        cands = [c for c in cands if c]
        return max(cands, key=gbps) if cands else None

    def speedup(other, fused):
        return other["t"] / fused["t"] if other and fused else float("nan")

    def torch_ratios(g, n, fused):
        """PyTorch eager's and torch.compile's time over ember_fused's (the peer's file)."""
        return [fx(speedup(get(g, "torch_eager", n), fused)),
                fx(speedup(get(g, "torch_compile", n), fused), TARGET_TORCH_COMPILE)]

    chain_groups = [g for g in groups if g.startswith("chain_")]
    if chain_groups:
        torch_cols = any(k[1].startswith("torch_") for k in res if k[0] in chain_groups)
        t = Table(["chain", "elements", "fused GB/s", "% omp_copy", "% best copy", "vs Eigen",
                   "vs op-by-op", "vs op-by-op (prealloc)", "vs loop_omp"] +
                  (["vs torch eager", "vs torch.compile"] if torch_cols else []), args.markdown)
        for g in chain_groups:
            dtype = g.rsplit("_", 1)[1]
            for n in sizes:
                fused = get(g, "ember_fused", n)
                if not fused:
                    continue
                copy = get(f"copy_{dtype}", "omp_copy", n)
                best = best_copy(dtype, n)
                pc = gbps(fused) / gbps(copy) if copy else float("nan")
                pb = gbps(fused) / gbps(best) if best else float("nan")
                e = speedup(get(g, "eigen", n), fused)
                o = speedup(get(g, "ember_opbyop", n), fused)
                op = speedup(get(g, "ember_opbyop_prealloc", n), fused)
                lp = speedup(get(g, "loop_omp", n), fused)
                t.add(g, size_label(n), f"{gbps(fused):7.2f}", pct(pc, TARGET_COPY), pct(pb),
                      fx(e, TARGET_EIGEN), fx(o, TARGET_OPBYOP), fx(op), fx(lp),
                      *(torch_ratios(g, n, fused) if torch_cols else []))
        print(f"## Fused chain (targets: >= {100 * TARGET_COPY:.0f}% of copy bandwidth, "
              f">= {TARGET_EIGEN:.1f}x Eigen, >= {TARGET_OPBYOP:.0f}x op by op)\n")
        print("  vs X = X's time / ember_fused's time (above 1: ember_fused is faster)\n")
        t.print()

    # ---- autodiff: fused backward against op by op and against the hand-written floor ----
    def launches(r):
        return "-" if not r or r.get("launches") is None else f"{r['launches']:.0f}"

    ad_groups = [g for g in groups if g.startswith("autograd_")]
    if ad_groups:
        torch_cols = any(k[1].startswith("torch_") for k in res if k[0] in ad_groups)
        t = Table(["autodiff", "elements", "fused time", "fused GB/s", "% omp_copy", "op-by-op time",
                   "vs op-by-op", "loop_omp GB/s", "% of loop_omp", "passes (fused/op-by-op)"] +
                  (["vs torch eager", "vs torch.compile"] if torch_cols else []), args.markdown)
        for g in ad_groups:
            dtype = g.rsplit("_", 1)[1]
            for n in sizes:
                fused = get(g, "ember_fused", n)
                if not fused:
                    continue
                copy = get(f"copy_{dtype}", "omp_copy", n)
                pc = gbps(fused) / gbps(copy) if copy else float("nan")
                obo = get(g, "ember_opbyop", n)
                loop = get(g, "loop_omp", n)
                floor_share = loop["t"] / fused["t"] if loop else float("nan")
                t.add(g, size_label(n), fmt_time(fused["t"]), f"{gbps(fused):7.2f}", pct(pc),
                      fmt_time(obo["t"]) if obo else "-", fx(speedup(obo, fused)),
                      f"{gbps(loop):7.2f}" if loop else "-", pct(floor_share),
                      f"{launches(fused)}/{launches(obo)}",
                      *(torch_ratios(g, n, fused) if torch_cols else []))
        print("## Autodiff: the 8-op chain tanh(a*b + c) * sigmoid(a - c) + exp(b)\n")
        print("  bwd: y.backward(g) alone; fwdbwd: zero_grad, forward and backward. GB/s counts the fewest")
        print("  bytes (bwd: a, b, c, g read, 3 gradients written; fwdbwd: + a, b, c read, y written).")
        print("  vs op-by-op = ember_opbyop's time / ember_fused's (above 1: fused is faster);")
        print("  % of loop_omp = loop_omp's time / ember_fused's (100%: the hand-written floor);")
        print("  passes = parallel passes of one backward (a copy of the seed included);")
        print("  vs torch = PyTorch's time / ember_fused's (bench/torch_cpu_peer.py, same run)\n")
        t.print()

    # ---- reductions ----
    red_groups = [g for g in groups if not g.startswith(("chain_", "copy_", "autograd_", "op_"))]
    if red_groups:
        t = Table(["reduction", "variant", "elements", "GB/s", "% omp_copy", "vs Eigen"], args.markdown)
        for g in red_groups:
            dtype = g.rsplit("_", 1)[1] if "_" in g else "f32"
            for v in sorted({k[1] for k in res if k[0] == g and k[1] != "eigen"}):
                for n in sizes:
                    r = get(g, v, n)
                    if not r:
                        continue
                    copy = get(f"copy_{dtype}", "omp_copy", n)
                    pc = gbps(r) / gbps(copy) if copy else float("nan")
                    e = speedup(get(g, "eigen", n), r)
                    t.add(g, v, size_label(n), f"{gbps(r):7.2f}", pct(pc), fx(e, TARGET_EIGEN))
        print("## Reductions over the last axis (rows x 1024, float)\n")
        t.print()

    # ---- operators: ember against the library call or loop it should match ----
    op_groups = [g for g in groups if g.startswith("op_")]
    if op_groups:
        t = Table(["operator", "case", "ember", "time", "rate", "peer", "peer rate", "ember/peer",
                   "% omp_copy"], args.markdown)
        for g in op_groups:
            variants = sorted({k[1] for k in list(res) + list(errors) if k[0] == g})
            peers = [v for v in variants if not v.startswith("ember")]
            peer_name = peers[0] if len(peers) == 1 else None
            for n in [n for n in sizes if isinstance(n, str)]:
                for v in [v for v in variants if v.startswith("ember")]:
                    key = (g, v, n)
                    if key in errors:
                        t.add(g, n, v, "ERROR", errors[key][:40], "", "", "", "")
                        continue
                    r = get(g, v, n)
                    if not r:
                        continue
                    peer = get(g, peer_name, n) if peer_name else None

                    def rate(x):
                        if not x:
                            return "-"
                        return f"{gflops(x):7.1f} GFLOP/s" if x.get("flops") else f"{gbps(x):7.2f} GB/s"

                    copy = get("copy_f32", "omp_copy", n) if not r.get("flops") else None
                    pc = gbps(r) / gbps(copy) if copy else float("nan")
                    t.add(g, n, v, fmt_time(r["t"]), rate(r), peer_name or "-", rate(peer),
                          fx(speedup(peer, r)), pct(pc))
        print("## Operators: ember against the library call or loop it should match\n")
        print("  GEMM and linear: M x N x K; rate: GFLOP/s (2 M N K; conv2d 2 N O OH OW C KH KW) or GB/s")
        print("  (x read and y written once). ember/peer = peer's time / ember's time = ember's rate over")
        print("  the peer's: 1.00 is no overhead, below 1 ember is slower. % omp_copy: against the")
        print("  OpenMP copy of the same size (copy_f32/omp_copy)\n")
        t.print()

    if errors:
        print("## Errors")
        for k, m in sorted(errors.items()):
            print(f"  {k[0]}/{k[1]}/{k[2]}: {m}")


if __name__ == "__main__":
    main()
