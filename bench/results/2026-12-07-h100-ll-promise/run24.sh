#!/usr/bin/env bash
# GPU run 24 (not part of the project): what the relay route's remaining excess over the model is
# (registered buffers): in place (no own-shard copy) against out of place, all-gather and
# reduce-scatter, A = 2 and 4; then relay.torch's async form under cProfile on CUDA.
set -uo pipefail
cd "$(dirname "$0")/../.."
mkdir -p out && tar -xJf out/pack.tar.xz -C out
exec > >(tee "$OUT/run24.log") 2>&1
date -u
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
mps on
R=$B/relay-run
export RELAY_TIMEOUT=30
for A in 2 4; do
  helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
  for cfg in "1 0" "1 1" "0 0" "1 4"; do
    read -r reg blocks <<<"$cfg"
    name=a${A}_reg${reg}_b${blocks}
    echo "== $name (RELAY_BENCH_REGISTER=$reg RELAY_IPC_PACED_BLOCKS=$blocks)"
    RELAY_BENCH_REGISTER=$reg RELAY_IPC_PACED_BLOCKS=$blocks timeout 60 "$R" -n $A --timeout 55 -- "$B/relay-bench" -x ipc -N 8 -A $A -m single \
      --helper-devices $helpers --emulate-mesh 12 -t mesh:12:4.39:0.08:2864 --baseline direct --in-place 1 \
      -C all -r relay -b 4M -e 64M -f 4 -n 5 -w 1 --progress 0 --csv "$OUT/$name.csv" > "$OUT/$name.log" 2>&1
    echo "exit $?"
    grep -E "^\[0\] +[0-9]|^\[0\] +# +size|relay-bench: |wrong" "$OUT/$name.log" | cut -c1-250 | head -30
  done
done
mps on
export RELAY_C_LIBRARY_DIR=$B PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
timeout 90 "$R" -n 2 --timeout 85 -- python3 bench/tools/call-cost/call_cost.py --device cuda --bytes 4096 \
  --calls 3000 --warmup 200 --what sync,async,torchcomms --profile 3000 > "$OUT/profile.log" 2>&1
echo "profile exit $?"
grep "^\[0\]" "$OUT/profile.log" | cut -c1-200 | head -120
mps off
(cd "$OUT" && tar czf run24.tgz --exclude run24.tgz --exclude run24.log -- * && find . -maxdepth 1 -type f ! -name run24.tgz ! -name run24.log -delete)
