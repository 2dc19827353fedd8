#!/usr/bin/env python3
"""Joins bench_resnet_cpu's Google Benchmark JSON (medians of repetitions) with
resnet_cpu_peer.py's JSON into one results file: ember's and PyTorch's images/s per case and
their ratio, ember's layout against PyTorch's same layout and against PyTorch's faster one.
Each of --ember and --torch may be given more than once (runs before and after the other side's,
on this VM whose speed drifts within minutes): a case's rate is then the geometric mean of its
runs, and each run's rates are kept in the file. Each row ends with the strongest peer measured
for the case (eager, torch.compile or libtorch, either layout) and ember's ratio over it.

  python3 bench/resnet_compare.py --ember ember.json --torch torch.json --note "..." \\
      --out bench/results/cpu-resnet-<date>-<commit>.json
"""
import argparse
import datetime
import json
import math
import os
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True, action="append")
    ap.add_argument("--torch", required=True, action="append")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", help="the commit ember was built from (default: HEAD)")
    a = ap.parse_args()
    ember_runs = [ember_rates(path) for path in a.ember]
    peers = [json.load(open(path)) for path in a.torch]
    torch_runs = [p["results"] for p in peers]
    ember = mean_rates(ember_runs)
    torch = mean_rates(torch_runs)
    peer = peers[0]
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                        capture_output=True, text=True).stdout.strip()
    results = {}
    for case, rate in sorted(ember.items()):
        if case not in torch:
            continue
        model, batch = case.rsplit("/", 1)
        other = (model.removesuffix("_nhwc") if model.endswith("_nhwc") else model + "_nhwc")
        other += "/" + batch
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
        results[case] = row
        print(line)
    out = {"date": datetime.date.today().isoformat(), "commit": commit,
           "machine": machine(),
           "torch": peer.get("torch"), "torch_threads": peer.get("threads"), "note": a.note,
           "results": results,
           "runs": {"ember": ember_runs, "torch": torch_runs}}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
