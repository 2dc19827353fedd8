#!/bin/sh
# ctest's example_resnet50_write_faults and example_bert_pretrain_write_faults: the trainer ($1,
# writing under the scratch directory $2) runs until the checkpoint of step or epoch $3
# (--stop-after), then
#   1. resumes with files limited to a fraction of that checkpoint's size (RLIMIT_FSIZE, as a
#      full disk): the next checkpoint cannot be written, so the run must end with status 1 and
#      one line naming the file and "File too large", leave no temporary file, and leave the
#      previous checkpoint byte for byte as it was;
#   2. resumes into the same --out made read-only (chmod as a user; as root, whom permission bits
#      do not stop, the immutable attribute of chattr, or the user nobody through setpriv): the
#      run must refuse at once, status 2, naming --out;
#   3. resumes once more with nothing in the way: the kept checkpoint loads and the run ends.
# Prints "write fault check passed" at the end; any failure stops it with a message.
set -eu
trainer=$1 work=$2 stop_after=$3
shift 3
out=$work/out
ckpt=$out/ckpt-last.safetensors
immutable=""
cleanup() { if [ -n "$immutable" ]; then chattr -i "$out" 2>/dev/null || true; fi; }
trap cleanup EXIT
fail() { echo "$*"; exit 1; }
rm -rf "$work"
mkdir -p "$work"

"$trainer" "$@" --out "$out" --stop-after "$stop_after" >"$work/first.txt" 2>&1 ||
  { tail -n 20 "$work/first.txt"; fail "the first run failed"; }
[ -f "$ckpt" ] || fail "the first run left no checkpoint at $ckpt"
cp "$ckpt" "$work/kept.safetensors"

# 1. Files may not grow past a sixteenth or an eighth of the checkpoint (ulimit -f counts blocks
#    of 512 bytes in some shells and 1024 in others).
blocks=$(($(wc -c <"$ckpt") / 8192 + 1))
status=0
(ulimit -f "$blocks" && exec "$trainer" "$@" --out "$out" --resume auto) \
  >"$work/full.txt" 2>"$work/full.err" || status=$?
[ "$status" -eq 1 ] || { cat "$work/full.err"; fail "with files limited to $blocks blocks the run ended with status $status, not 1"; }
# stderr also holds the progress bar; the error is its last line, and the only one that names it.
tail -n 1 "$work/full.err" | grep -q "File too large" ||
  { cat "$work/full.err"; fail "the last line of stderr does not say the file was too large"; }
[ "$(grep -c "File too large" "$work/full.err")" -eq 1 ] ||
  { cat "$work/full.err"; fail "the error is not one line"; }
cmp -s "$ckpt" "$work/kept.safetensors" || fail "the previous checkpoint changed"
if ls "$out" | grep -q '\.tmp\.'; then fail "the failed save left a temporary file: $(ls "$out")"; fi
echo "full disk: $(tail -n 1 "$work/full.err")"

# 2. A read-only --out: made so for this user (root passes permission bits), then restored.
as_user=""  # runs the trainer as someone else (setpriv ...), or as this user
if [ "$(id -u)" -ne 0 ]; then
  chmod a-w "$out"
elif chattr +i "$out" 2>/dev/null; then
  immutable=1
else
  chmod a-w "$out"
  as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
status=0
$as_user "$trainer" "$@" --out "$out" --resume auto >"$work/ro.txt" 2>"$work/ro.err" || status=$?
if [ -n "$immutable" ]; then chattr -i "$out"; immutable=""; else chmod u+w "$out"; fi
[ "$status" -eq 2 ] || { cat "$work/ro.err"; fail "into a read-only --out the run ended with status $status, not 2"; }
grep -q -- "--out" "$work/ro.err" || { cat "$work/ro.err"; fail "the error does not name --out"; }
cmp -s "$ckpt" "$work/kept.safetensors" || fail "the checkpoint changed in the read-only run"
echo "read-only --out: $(tail -n 1 "$work/ro.err")"

# 3. The kept checkpoint resumes.
"$trainer" "$@" --out "$out" --resume auto >"$work/last.txt" 2>&1 ||
  { tail -n 20 "$work/last.txt"; fail "resuming from the kept checkpoint failed"; }
echo "write fault check passed"
