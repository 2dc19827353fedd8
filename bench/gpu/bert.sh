#!/usr/bin/env bash
# BERT pretraining throughput on the lent GPU: ember's trainer (examples/bert, synthetic
# sequences of 128 tokens, 20 masked, bf16, AdamW) against Hugging Face's BertForPreTraining
# (bench/gpu/bert_peer.py: autocast bf16, fused AdamW, eager and torch.compile), BERT-base and
# BERT-large, in the same run. Called by bench/gpu/check.sh (NO_BERT=1 skips it), or alone:
#
#   bash bench/gpu/stage_deps.sh        # here: CLI11, nlohmann/json, zlib, TurboJPEG, Catch2
#   run(command="bash bench/gpu/bert.sh", carry=[".device-deps"], timeout_s=400)
#
# Environment: BERT_BUDGET_S (default 300), BERT_CONFIGS ("base large"), BERT_BATCH (64),
# BERT_STEPS (20), OUT (where bert-<stamp>.json and .log go; default bench/results), NO_COMPILE=1.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
source bench/gpu/build_example.sh
budget=${BERT_BUDGET_S:-300}
configs=${BERT_CONFIGS:-base large}
batch=${BERT_BATCH:-64}
steps=${BERT_STEPS:-20}
out=${OUT:-$root/bench/results}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-bert.XXXXXX")
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
stamp=$(date -u +%Y%m%d-%H%M%S)
log="$out/bert-$stamp.log"
status=0
{
  bin="$work/bert_pretrain"
  build_example examples/bert/pretrain.cu "$bin" $(($(left) - 60)) "$work/nvcc.log" -lz || exit 1
  echo "== built after $((SECONDS - t0)) s"
  echo "[" >"$work/rows.json"
  first=1
  for config in $configs; do
    echo "== ember: bert-$config, synthetic, seq 128, batch $batch, bf16, adamw, $steps steps"
    timeout $(($(left) - 30)) "$bin" --corpus synthetic --config "$config" --seq-len 128 \
      --max-predictions 20 --batch-size "$batch" --steps "$steps" --eval-every "$steps" \
      --eval-sequences "$batch" --optimizer adamw --lr 1e-4 --precision bf16 --device cuda \
      --out "$work/run-$config" --log-every 5 2>&1 | tail -n 8 | tee "$work/ember-$config.txt"
    sps=$(sed -n 's/^training throughput: \([0-9.]*\) sequences\/s.*/\1/p' "$work/ember-$config.txt")
    [[ -n "$sps" ]] || status=1
    echo "== PyTorch peer, bert-$config ($(left) s left)"
    peer_flags=(--config "$config" --batch "$batch" --steps "$steps" --json "$work/torch-$config.json")
    [[ "${NO_COMPILE:-0}" == 1 || $(left) -lt 150 ]] && peer_flags+=(--no-compile)
    TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/triton" \
      timeout $(($(left) - 5)) python3 bench/gpu/bert_peer.py "${peer_flags[@]}" || status=1
    [[ $first == 1 ]] || echo "," >>"$work/rows.json"
    first=0
    printf '{"config": "%s", "ember_sequences_per_s": %s, "peer": "%s"}\n' "$config" \
      "${sps:-0}" "$work/torch-$config.json" >>"$work/rows.json"
  done
  echo "]" >>"$work/rows.json"
  python3 - "$work/rows.json" "$batch" "$out/bert-$stamp.json" <<'PY'
import json, os, sys
rows = json.load(open(sys.argv[1]))
for r in rows:
    peer = json.load(open(r["peer"])) if os.path.exists(r["peer"]) else []
    r["peers"] = peer
    r["batch"] = int(sys.argv[2])
    for p in peer:
        r[f"ratio_vs_torch_{p['mode']}"] = (r["ember_sequences_per_s"] / p["sequences_per_s"]
                                            if p["sequences_per_s"] else None)
    del r["peer"]
json.dump(rows, open(sys.argv[3], "w"), indent=1)
print(json.dumps(rows, indent=1))
PY
  exit $status
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
