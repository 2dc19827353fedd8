#!/usr/bin/env python3
"""Build time as a benchmark: compiles the example programs' translation units (the three trainers
under g++ and under nvcc, resnet_predict, quickstart) one by one and records each one's wall and CPU
seconds and peak memory; with --baseline REV, the same translation units of that commit too, each
pair compiled side by side so that both see the same load (the ratio is what to read; this VM's
speed drifts between days).

  python3 bench/build_time.py                           # this tree
  python3 bench/build_time.py --baseline HEAD~3         # this tree against an older commit
  python3 bench/build_time.py --only train.cpp,quickstart --out bench/results/build-<date>-<commit>.json

The compile commands are CMake's own (CMAKE_EXPORT_COMPILE_COMMANDS), from two configurations of
build-time/: EMBER_CUDA=OFF (the .cpp programs, g++) and, when nvcc is found, EMBER_CUDA=ON (the
.cu programs). A baseline is checked out with `git worktree` and compiled with the same commands,
its paths in place of this tree's.
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (configuration, source) pairs: the programs users build.
# The trainers' options.cpp (their command lines) and BERT's pretraining data (its library) are
# host code in both configurations.
SOURCES = [("cpu", "examples/resnet50/train.cpp"), ("cpu", "examples/bert/pretrain.cpp"),
           ("cpu", "examples/gpt2/train.cpp"), ("cpu", "examples/resnet50/options.cpp"),
           ("cpu", "examples/bert/options.cpp"), ("cpu", "examples/gpt2/options.cpp")] + \
          [("cpu", f"examples/bert/pretraining/{unit}.cpp")
           for unit in ("batches", "documents", "gcide", "instance_cache", "instances")] + \
          [("cpu", "examples/resnet50/predict.cpp"), ("cpu", "examples/quickstart.cpp"),
           ("cuda", "examples/resnet50/train.cu"), ("cuda", "examples/bert/pretrain.cu"),
           ("cuda", "examples/gpt2/train.cu"), ("cuda", "examples/quickstart.cu")]


def configure(kind, build_root):
    build = os.path.join(build_root, kind)
    subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DEMBER_BUILD_TESTS=OFF",
                    "-DEMBER_BUILD_BENCHMARKS=OFF", "-DEMBER_BUILD_EXAMPLES=ON",
                    f"-DEMBER_CUDA={'OFF' if kind == 'cpu' else 'ON'}"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(build, "compile_commands.json")) as f:
        return {os.path.relpath(e["file"], ROOT): e for e in json.load(f)}


def arguments(entry):
    """The compile command's arguments, nvcc's response files spelt out, no dependency files."""
    args, it = [], iter(shlex.split(entry["command"]))
    for arg in it:
        if arg == "--options-file":
            with open(os.path.join(entry["directory"], next(it))) as f:
                args += shlex.split(f.read())
        elif arg in ("-MF", "-MT", "-MQ"):
            next(it)
        elif arg not in ("-MD", "-MMD"):
            args.append(arg)
    return args


def start(entry, root, obj):
    """Starts one compile of `entry` with the sources under `root`, its object to `obj`."""
    args = [arg.replace(ROOT + "/", root + "/") for arg in arguments(entry)]
    args[args.index("-o") + 1] = obj
    timing = obj + ".time"
    proc = subprocess.Popen(["/usr/bin/time", "-f", "%e %U %S %M", "-o", timing] + args,
                            cwd=entry["directory"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    return proc, timing


def finish(proc, timing, what):
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{what}: the compile failed\n{err[-3000:]}")
    with open(timing) as f:
        wall, user, system, rss = f.read().split()[-4:]
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system),
            "max_rss_mb": int(rss) / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="a commit to compile beside this tree")
    ap.add_argument("--only", default="",
                    help="only the sources whose path contains one of these (comma-separated)")
    ap.add_argument("--build-root", default=os.path.join(ROOT, "build-time"))
    ap.add_argument("--out", help="write the results here as JSON")
    a = ap.parse_args()

    kinds = ["cpu"] + (["cuda"] if shutil.which("nvcc") or os.path.exists(
        "/usr/local/cuda/bin/nvcc") else [])
    commands = {kind: configure(kind, a.build_root) for kind in kinds}
    scratch = tempfile.mkdtemp(prefix="ember-build-time-")
    baseline_root = None
    if a.baseline:
        baseline_root = os.path.join(scratch, "baseline")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", baseline_root,
                        a.baseline], check=True, stdout=subprocess.DEVNULL)
    results = {}
    try:
        for kind, source in SOURCES:
            if kind not in kinds or not any(part in source for part in a.only.split(",")):
                continue
            entry = commands[kind].get(source)
            if entry is None:
                print(f"{source}: not in the {kind} configuration's compile commands; skipped")
                continue
            name = os.path.basename(source).replace(".", "_")
            here = start(entry, ROOT, os.path.join(scratch, name + ".o"))
            base = start(entry, baseline_root, os.path.join(scratch, name + "_base.o")) \
                if baseline_root and os.path.exists(os.path.join(baseline_root, source)) else None
            try:
                this_tree = finish(*here, source)
            except SystemExit:
                if base:  # not left compiling after this script has stopped
                    base[0].kill()
                    base[0].wait()
                raise
            r = {"compiler": "nvcc" if source.endswith(".cu") else "g++", "this_tree": this_tree}
            if base:
                r["baseline"] = finish(*base, f"{source} at {a.baseline}")
                r["cpu_ratio_baseline_over_this"] = r["baseline"]["cpu_s"] / r["this_tree"]["cpu_s"]
            results[source] = r
            line = f"{source:34s} {r['this_tree']['cpu_s']:7.1f} s CPU " \
                   f"{r['this_tree']['max_rss_mb']:6.0f} MB"
            if base:
                line += f"   baseline {r['baseline']['cpu_s']:7.1f} s " \
                        f"{r['baseline']['max_rss_mb']:6.0f} MB   " \
                        f"x{r['cpu_ratio_baseline_over_this']:.2f}"
            print(line, flush=True)
    finally:
        if baseline_root:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", baseline_root],
                           check=False)
        shutil.rmtree(scratch, ignore_errors=True)

    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    report = {"date": datetime.date.today().isoformat(), "commit": commit,
              "baseline": a.baseline, "machine": f"{os.cpu_count()} CPUs",
              "note": "each pair compiled side by side (2 compiles at once); CPU seconds are the "
                      "compiler's user + system time", "results": results}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
