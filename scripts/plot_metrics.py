#!/usr/bin/env python3
"""Plot training curves from JSON Lines metrics logs (ember::io::JsonlWriter's files).

Each line of a file is one JSON object with a "step" and any metrics, e.g.
  {"step": 10, "epoch": 1, "loss": 0.5, "time_s": 12.3}
The plot has the loss keys ("loss" and any key ending in "_loss") against step, and, when any
record has one, a second panel with the accuracy keys (any key ending in "accuracy"). Each file
is one set of lines, labelled by its file name. Lines without a "step" or without the key are
skipped for that curve; null values (NaN when logged) leave a gap.

  python3 scripts/plot_metrics.py run1.jsonl run2.jsonl --out curves.png --title "ResNet-50"

Needs matplotlib (Debian: python3-matplotlib). Exit status: 0 when the PNG was written, 1 on a
bad input file, 2 when matplotlib is missing or the command line is wrong.
"""

import argparse
import json
import math
import os
import sys


def is_loss_key(key):
    return key == "loss" or key.endswith("_loss")


def is_accuracy_key(key):
    return key.endswith("accuracy")


def read_jsonl(path):
    """The records of one file; exits with status 1 naming the file and line on bad JSON."""
    records = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"error: {path}:{lineno}: not JSON ({e.msg})")
                if not isinstance(record, dict):
                    sys.exit(f"error: {path}:{lineno}: not a JSON object")
                records.append(record)
    except OSError as e:
        sys.exit(f"error: cannot read {path}: {e.strerror}")
    return records


def curves(records, want):
    """{key: (steps, values)} for the keys that `want` accepts, in order of first appearance."""
    out = {}
    for r in records:
        step = r.get("step")
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            continue
        for key, value in r.items():
            if not want(key):
                continue
            if value is None:
                value = math.nan
            elif not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            steps, values = out.setdefault(key, ([], []))
            steps.append(step)
            values.append(float(value))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Plot loss (and accuracy) against step from JSONL metrics logs.")
    parser.add_argument("files", nargs="+", help="JSONL files, one JSON object per line")
    parser.add_argument("--out", default="curves.png", help="the PNG to write (curves.png)")
    parser.add_argument("--title", default=None, help="the figure's title")
    args = parser.parse_args(argv)

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("error: plot_metrics.py needs matplotlib, which is not installed: install the "
              "Debian package python3-matplotlib (apt-get install python3-matplotlib) or "
              "`pip install matplotlib`", file=sys.stderr)
        return 2

    data = []
    for path in args.files:
        records = read_jsonl(path)
        name = os.path.basename(path)
        for suffix in (".jsonl", ".json", ".log"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        data.append((name, curves(records, is_loss_key), curves(records, is_accuracy_key)))

    if not any(loss or acc for _, loss, acc in data):
        print("error: no loss or accuracy values with a step in: " + ", ".join(args.files),
              file=sys.stderr)
        return 1

    has_acc = any(acc for _, _, acc in data)
    fig, axes = plt.subplots(1, 2 if has_acc else 1, figsize=(12 if has_acc else 7, 4.5),
                             squeeze=False)
    panels = [(axes[0][0], 1, "loss")]
    if has_acc:
        panels.append((axes[0][1], 2, "accuracy"))
    multi = len(data) > 1
    for ax, which, ylabel in panels:
        for name, loss, acc in data:
            for key, (steps, values) in (loss if which == 1 else acc).items():
                label = f"{name}: {key}" if multi else key
                ax.plot(steps, values, label=label, linewidth=1.2,
                        marker="o" if len(steps) <= 30 else None, markersize=3)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if ax.lines:
            ax.legend(fontsize="small")
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
