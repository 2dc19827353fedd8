#!/usr/bin/env bash
# ResNet-50 training throughput on the lent GPU: ember's trainer (examples/resnet50, synthetic
# data, 224x224, bf16, channels-last, batch 256) against PyTorch's (bench/gpu/resnet_peer.py:
# torchvision's resnet50 with autocast bf16 + channels_last, eager and torch.compile), in the same
# run. Called by bench/gpu/check.sh as its last stage (NO_RESNET=1 skips it), or alone:
#
#   bash bench/gpu/stage_deps.sh        # here: CLI11, nlohmann/json, zlib, TurboJPEG, Catch2
#   run(command="bash bench/gpu/resnet.sh", carry=[".device-deps"], timeout_s=400)
#
# Environment: RESNET_BUDGET_S (default 300), RESNET_BATCH (256), RESNET_STEPS (30), OUT (where
# resnet-<stamp>.json and .log go; default bench/results), NO_COMPILE=1 (eager PyTorch only).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root" || exit 1
source bench/gpu/build_example.sh
budget=${RESNET_BUDGET_S:-300}
batch=${RESNET_BATCH:-256}
steps=${RESNET_STEPS:-30}
out=${OUT:-$root/bench/results}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-resnet.XXXXXX")
t0=$SECONDS
left() { echo $((budget - (SECONDS - t0))); }
stamp=$(date -u +%Y%m%d-%H%M%S)
log="$out/resnet-$stamp.log"
status=0
{
  bin="$work/resnet50_train"
  build_example examples/resnet50/train.cu "$bin" $(($(left) - 60)) "$work/nvcc.log" -lturbojpeg -lz || exit 1
  echo "== built after $((SECONDS - t0)) s"
  echo "== ember: resnet50, synthetic 224x224, batch $batch, bf16, channels-last, $steps steps"
  timeout $(($(left) - 30)) "$bin" --data synthetic --arch resnet50 --batch-size "$batch" \
    --image-size 224 --steps-per-epoch "$steps" --epochs 1 --precision bf16 --device cuda \
    --out "$work/run" --log-every 10 2>&1 | tail -n 12 | tee "$work/ember.txt"
  ember_ips=$(sed -n 's/^training throughput: \([0-9.]*\) images\/s.*/\1/p' "$work/ember.txt")
  [[ -n "$ember_ips" ]] || status=1
  echo "== PyTorch peer ($(left) s left)"
  peer_flags=(--batch "$batch" --steps "$steps" --json "$work/torch.json")
  [[ "${NO_COMPILE:-0}" == 1 || $(left) -lt 150 ]] && peer_flags+=(--no-compile)
  TORCHINDUCTOR_CACHE_DIR="$work/inductor" TRITON_CACHE_DIR="$work/triton" \
    timeout $(($(left) - 5)) python3 bench/gpu/resnet_peer.py "${peer_flags[@]}" || status=1
  python3 - "$work/torch.json" "${ember_ips:-0}" "$batch" "$out/resnet-$stamp.json" <<'PY'
import json, os, sys
peer = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else []
ember = float(sys.argv[2])
rows = {"ember_images_per_s": ember, "batch": int(sys.argv[3]), "peers": peer}
for p in peer:
    rows[f"ratio_vs_torch_{p['mode']}"] = ember / p["images_per_s"] if p["images_per_s"] else None
json.dump(rows, open(sys.argv[4], "w"), indent=1)
print(json.dumps(rows, indent=1))
PY
} 2>&1 | tee "$log"
exit "${PIPESTATUS[0]}"
