#!/usr/bin/env bash
# BERT pretraining steps on the CPU, side by side: ember's trainer (examples/bert: synthetic
# sequences, AdamW, gradient clipping at norm 1) against Hugging Face's BertForPreTraining
# (bench/gpu/bert_peer.py --device cpu: the same sequences, AdamW, clipping; eager, and under
# torch.compile unless NO_COMPILE=1) and libtorch's C++ frontend (bench/libtorch_peer, built here
# against the torch wheel's CMake package, unless NO_LIBTORCH=1: the same BERT written with
# torch::nn, its masked-LM head at the masked positions as ember's), with the same thread count,
# BERT tiny and mini, sequence length 128, 20 masked positions, batch 16 and 32, float
# (PRECISION=bf16: ember's --precision bf16 against autocast to bf16 in PyTorch and libtorch). Each row also says how far from the machine's limit
# ember is: the model's matrix-product GFLOP a sequence (forward and backward, the masked
# positions' head), ember's GFLOP/s and its share of the best float GEMM measured here (the
# newest bench/results/cpu-gemm-*.json, bench/gemm_cpu.sh; float only: bf16's products run on AMX)
# and of the arithmetic limit measured in the same run (bench_peak_cpu).
#
#   bench/bert_cpu.sh                                # writes bench/results/cpu-bert-<date>-<commit>.json
#   CONFIGS=tiny BATCHES=16 STEPS=30 bench/bert_cpu.sh
#   CONFIGS=base BATCHES=4 SEQ_LENS="128 256" STEPS=6 bench/bert_cpu.sh
#
# Environment: BUILD_DIR (default build/test: bert_pretrain is built there if missing),
# CONFIGS ("tiny mini"), BATCHES ("16 32"), SEQ_LENS ("128"), STEPS (40), PRECISION (float),
# NO_COMPILE, NO_LIBTORCH, OMP_NUM_THREADS (default: all cores, for all).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source bench/libtorch.sh
build=${BUILD_DIR:-$root/build/test}
configs=${CONFIGS:-tiny mini}
batches=${BATCHES:-16 32}
seq_lens=${SEQ_LENS:-128}
steps=${STEPS:-40}
precision=${PRECISION:-float}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
[[ -x "$build/examples/bert_pretrain" ]] || cmake --build "$build" --target bert_pretrain -j"$(nproc)"
[[ -x "$build/bench/bench_peak_cpu" ]] || cmake --build "$build" --target bench_peak_cpu -j"$(nproc)"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- include examples bench || echo -dirty)
out=bench/results/cpu-bert-$(date -u +%Y%m%d-%H%M%S)-$commit.json
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-bert-cpu.XXXXXX")
libtorch=""
if [[ "${NO_LIBTORCH:-0}" != 1 ]]; then
  libtorch_build=$(build_libtorch_project bench/libtorch_peer)
  libtorch="$libtorch_build/libtorch_peer"
fi
echo "==> the arithmetic limit (bench_peak_cpu)"
"$build/bench/bench_peak_cpu" --benchmark_repetitions=3 --benchmark_out="$work/peak.json" \
  --benchmark_out_format=json
rows=()
for config in $configs; do
  for seq in $seq_lens; do
    for batch in $batches; do
      "$build/examples/bert_pretrain" --corpus synthetic --config "$config" --seq-len "$seq" \
        --max-predictions 20 --batch-size "$batch" --steps "$steps" --eval-every "$steps" \
        --eval-sequences "$batch" --optimizer adamw --lr 1e-4 --precision "$precision" \
        --device cpu --out "$work/run-$config-$seq-$batch" --log-every "$steps" >"$work/ember.txt" 2>&1
      sps=$(sed -n 's/^training throughput: \([0-9.]*\) sequences\/s.*/\1/p' "$work/ember.txt")
      peer_flags=(--device cpu --precision "$precision" --config "$config" --batch "$batch"
        --seq "$seq" --steps "$((steps / 2))" --warmup 3 --json "$work/torch.json")
      [[ "${NO_COMPILE:-0}" == 1 ]] && peer_flags+=(--no-compile)
      TORCHINDUCTOR_CACHE_DIR="$work/inductor" python3 bench/gpu/bert_peer.py "${peer_flags[@]}" >/dev/null
      echo "{}" >"$work/libtorch.json"
      if [[ -n "$libtorch" ]]; then
        "$libtorch" bert "$config" "$batch" "$seq" 20 "$((steps / 2))" 3 \
          "$([[ $precision == bf16 ]] && echo 1 || echo 0)" >"$work/libtorch.json"
      fi
      row=$(python3 - "$config" "$batch" "$seq" "${sps:-0}" "$work/torch.json" "$precision" \
        "$work/libtorch.json" "$work/peak.json" <<'PY'
import json, sys
sys.path[:0] = ["bench/gpu", "bench"]
from bert_peer import CONFIGS
from resnet_compare import best_gemm_gflops, hardware_peaks
config, batch, seq, ember = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
c = CONFIGS[config]
L, d, f, P, V = (c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"], 20, 30522)
# A sequence's matrix products, forward: per layer the four projections, the FFN and attention's
# two products; the head's transform and decoder on the masked positions. Training: 3x.
forward = L * (8 * seq * d * d + 4 * seq * d * f + 4 * seq * seq * d) + 2 * P * d * d + 2 * P * d * V
gflop = 3 * forward / 1e9
row = {"case": f"bert-{config}/seq{seq}/batch{batch}", "ember_sequences_per_s": ember,
       "gflop_per_sequence": gflop, "ember_gflops": ember * gflop}
# The float GEMM bounds a float step; bf16's products run on AMX, whose peak is not measured here.
peak, peak_from = best_gemm_gflops()
if peak and sys.argv[6] == "float":
    row.update(peak_gemm_gflops=peak, peak_from=peak_from,
               ember_percent_of_peak=100 * ember * gflop / peak)
peers = {f"torch_{p['mode']}": p["sequences_per_s"] for p in json.load(open(sys.argv[5]))}
libtorch = json.load(open(sys.argv[7]))
if libtorch:
    from transformers import BertConfig, BertForPreTraining
    expected = sum(p.numel() for p in BertForPreTraining(BertConfig(vocab_size=V, **c)).parameters())
    if libtorch["parameters"] != expected:
        sys.exit(f"libtorch_peer's BERT has {libtorch['parameters']} parameters, "
                 f"transformers' {expected}: not the same model")
    peers["libtorch"] = libtorch["sequences_per_s"]
for name, rate in peers.items():
    row[f"{name}_sequences_per_s"] = rate
    row[f"ratio_over_{name}"] = ember / rate
best = max(peers, key=peers.get)
row.update(best_peer=best, ratio_over_best_peer=ember / peers[best])
# The arithmetic limit measured in this run (FMAs; bf16 dot products on a CPU without AMX).
limit = hardware_peaks(sys.argv[8]).get(sys.argv[6])
if limit:
    row.update(hardware_peak_gflops=limit, ember_percent_of_hardware_peak=100 * ember * gflop / limit,
               best_peer_percent_of_hardware_peak=100 * peers[best] * gflop / limit)
print(json.dumps(row))
PY
)
      echo "$row"
      rows+=("$row")
    done
  done
done
python3 - "$out" "$precision" "$OMP_NUM_THREADS" "$commit" "${rows[@]}" <<'PY'
import datetime, json, sys
import torch
sys.path.insert(0, "bench")
from resnet_compare import machine  # model name and vector extensions: the VMs differ
out, precision, threads, commit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
doc = {"date": datetime.date.today().isoformat(), "commit": commit, "machine": machine(),
       "threads": threads, "precision": precision, "torch": torch.__version__,
       "results": [json.loads(r) for r in sys.argv[5:]]}
json.dump(doc, open(out, "w"), indent=1)
print("wrote", out)
PY
rm -rf "$work"
