#!/usr/bin/env python3
"""Joins bench_resnet_cpu's Google Benchmark JSON (medians of repetitions) with
resnet_cpu_peer.py's JSON into one results file: ember's and PyTorch's images/s per case and
their ratio, ember's layout against PyTorch's same layout and against PyTorch's faster one.
Each of --ember and --torch may be given more than once (runs before and after the other side's,
on this VM whose speed drifts within minutes): a case's rate is then the geometric mean of its
runs, and each run's rates are kept in the file. Each row ends with the strongest peer measured
for the case (eager, torch.compile or libtorch, either layout) and ember's ratio over it, and
the step's GFLOP/s (torch.utils.flop_counter's count) against the best float GEMM measured here.

  python3 bench/resnet_compare.py --ember ember.json --torch torch.json --note "..." \\
      --out bench/results/cpu-resnet-<date>-<commit>.json
"""
import argparse
import datetime
import functools
import glob
import json
import math
import os
import statistics
import subprocess


def ember_rates(path):
    rates = {}
    for b in json.load(open(path))["benchmarks"]:
        name = b["name"].replace("/real_time", "")
        if b.get("aggregate_name", "median") != "median":
            continue
        name = name.removesuffix("_median")
        rates[name] = b["items_per_second"]
    return rates


def mean_rates(runs):
    """Per case, the geometric mean of the runs that measured it."""
    cases = {c for run in runs for c in run}
    out = {}
    for c in cases:
        rates = [run[c] for run in runs if c in run]
        out[c] = math.prod(rates) ** (1.0 / len(rates))
    return out


def machine():
    """This machine in words: cores, model name, widest vector extension (the VMs differ)."""
    info = open("/proc/cpuinfo").read()
    model = next((l.split(":", 1)[1].strip() for l in info.splitlines()
                  if l.startswith("model name")), "unknown CPU")
    flags = set(next((l.split(":", 1)[1].split() for l in info.splitlines()
                      if l.startswith("flags")), []))
    isa = ("AVX-512 with BF16" if "avx512_bf16" in flags else "AVX-512" if "avx512f" in flags
           else "AVX2, no AVX-512" if "avx2" in flags else "no AVX2")
    if "amx_bf16" in flags:
        isa += " and AMX"
    return (f"{os.cpu_count()}-core x86-64 ({model}, {isa}, no GPU), "
            f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")


def best_gemm_gflops():
    """The machine's float limit as measured here: the best median GFLOP/s of any case in the
    newest bench/results/cpu-gemm-*.json (bench/gemm_cpu.sh), and that file; (None, None) if none."""
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                          "cpu-gemm-*.json")))
    if not files:
        return None, None
    rates = {}
    for b in json.load(open(files[-1]))["benchmarks"]:
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            rates.setdefault(b["run_name"], []).append(b["flops"] / 1e9)
    return max(statistics.median(v) for v in rates.values()), os.path.relpath(files[-1])


def hardware_peaks(path):
    """The arithmetic limit measured in this run by bench_peak_cpu (its Google Benchmark JSON):
    {"float": GFLOP/s of FMAs, "bf16": GFLOP/s of AVX512-BF16 dot products}, the median of the
    repetitions, each where measured. bf16 is left out on a CPU with AMX, whose tiles run bf16
    products at a rate that benchmark does not measure."""
    if not path:
        return {}
    rates = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            kind = {"peak/f32_fma": "float", "peak/bf16_dot": "bf16"}.get(
                b["run_name"].removesuffix("/real_time"))
            if kind:
                rates.setdefault(kind, []).append(b["flops"] / 1e9)
    if "amx_bf16" in open("/proc/cpuinfo").read():
        rates.pop("bf16", None)
    return {kind: statistics.median(v) for kind, v in rates.items()}


def gflop_per_image(case):
    """A training step's floating-point work per image for a case of resnet_cpu_peer.CASES
    (forward and backward, counted by torch.utils.flop_counter on the PyTorch model)."""
    return model_gflop_per_image(case.rsplit("/", 1)[0].replace("_nhwc", "").replace("_bf16", ""))


@functools.lru_cache(maxsize=None)
def model_gflop_per_image(model):
    """gflop_per_image's count, once per model and size (the layouts and dtypes share it)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    from resnet_cpu_peer import CASES
    from resnet_torch import resnet
    for name, kwargs, side, _ in CASES:
        if name == model:
            net = resnet(**kwargs)
            x = torch.randn(1, kwargs.get("in_channels", 3), side, side)
            with FlopCounterMode(display=False) as counter:
                net(x).sum().backward()
            return counter.get_total_flops() / 1e9
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True, action="append")
    ap.add_argument("--torch", required=True, action="append")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", help="the commit ember was built from (default: HEAD)")
    ap.add_argument("--peak", help="bench_peak_cpu's JSON from the same run (the FMA limit)")
    a = ap.parse_args()
    ember_runs = [ember_rates(path) for path in a.ember]
    peers = [json.load(open(path)) for path in a.torch]
    torch_runs = [p["results"] for p in peers]
    ember = mean_rates(ember_runs)
    torch = mean_rates(torch_runs)
    peer = peers[0]
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
    peak, peak_from = best_gemm_gflops()
    hardware = hardware_peaks(a.peak)
    results = {}
    for case, rate in sorted(ember.items()):
        if case not in torch:
            continue
        model, batch = case.rsplit("/", 1)
        # The same model and precision in the other layout: resnet50_128px[_nhwc][_bf16].
        other = (model.replace("px_nhwc", "px") if "px_nhwc" in model
                 else model.replace("px", "px_nhwc", 1)) + "/" + batch
        best_torch = max(torch[case], torch.get(other, 0.0))
        row = {"ember_images_per_s": rate, "torch_images_per_s": torch[case],
               "ratio_ember_over_torch": rate / torch[case],
               "ratio_over_torch_best_layout": rate / best_torch}
        line = (f"{case:40s} ember {rate:8.1f}  torch {torch[case]:8.1f}  "
                f"ratio {rate / torch[case]:.2f}  vs torch's best layout {rate / best_torch:.2f}")
        # torch.compile of the same step (resnet_cpu_peer.py --compile), where it was measured
        compiled = [torch[c + "/compile"] for c in (case, other) if c + "/compile" in torch]
        if case + "/compile" in torch:
            row["torch_compile_images_per_s"] = torch[case + "/compile"]
            row["ratio_over_torch_compile"] = rate / torch[case + "/compile"]
            line += f"  compile {torch[case + '/compile']:8.1f}"
        if compiled:
            row["ratio_over_torch_compile_best_layout"] = rate / max(compiled)
            line += f"  vs compile's best layout {rate / max(compiled):.2f}"
        # libtorch's C++ frontend (resnet_cpu_peer.py --libtorch), where it was measured
        libtorch = [torch[c + "/libtorch"] for c in (case, other) if c + "/libtorch" in torch]
        if libtorch:
            row["libtorch_best_layout_images_per_s"] = max(libtorch)
            row["ratio_over_libtorch_best_layout"] = rate / max(libtorch)
            line += f"  vs libtorch's best layout {rate / max(libtorch):.2f}"
        # The strongest peer of all: every mode and layout measured for this case.
        peers = {f"{c}{mode}": torch[c + mode] for c in (case, other)
                 for mode in ("", "/compile", "/libtorch") if c + mode in torch}
        best = max(peers, key=peers.get)
        row["best_peer"], row["ratio_over_best_peer"] = best, rate / peers[best]
        line += f"  vs the best peer {rate / peers[best]:.2f}"
        # Distance from the limit: the step's GFLOP/s against the best float GEMM measured here
        # (float only: bf16's convolutions run on AMX, whose peak is not measured).
        gflop = gflop_per_image(case)
        if gflop:
            row["gflop_per_image"], row["ember_gflops"] = gflop, rate * gflop
            if peak and "_bf16" not in case:
                row.update(peak_gemm_gflops=peak, peak_from=peak_from,
                           ember_percent_of_peak=100 * rate * gflop / peak)
                line += f"  {100 * rate * gflop / peak:.0f}% of peak"
            limit = hardware.get("bf16" if "_bf16" in case else "float")
            if limit:
                row.update(hardware_peak_gflops=limit,
                           ember_percent_of_hardware_peak=100 * rate * gflop / limit,
                           best_peer_percent_of_hardware_peak=100 * peers[best] * gflop / limit)
                line += (f"  {100 * rate * gflop / limit:.0f}% of the FMA limit"
                         f" (best peer {100 * peers[best] * gflop / limit:.0f}%)")
        results[case] = row
        print(line)
    out = {"date": datetime.date.today().isoformat(), "commit": commit,
           "machine": machine(), "hardware_peak_gflops": hardware,
           "torch": peer.get("torch"), "torch_threads": peer.get("threads"), "note": a.note,
           "results": results,
           "runs": {"ember": ember_runs, "torch": torch_runs}}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
