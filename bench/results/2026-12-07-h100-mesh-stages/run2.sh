#!/usr/bin/env bash
# GPU call 2 of 2026-12-07 (not part of the project): the same binaries as run1.sh. The relay
# route on the emulated mesh (12 GB/s, hosted helpers, registered) with the data area at its
# default (64 MiB: a 64 MiB call runs in pieces) and at 256 MiB (every call whole), side by side,
# twice; then the stage trace of the 64 MiB calls with the 256 MiB area.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 RELAY_TIMEOUT=30
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
source bench/common.sh
trap 'mps off' EXIT
mps on
o=$OUT/sweep; mkdir -p "$o"
R=out/bin/relay-run
topo=mesh:12:4.39:0.08:2864
for pass in 1 2; do
  for area in 64M 256M; do
    for A in 2 4; do
      helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
      echo "== pass $pass area $area A=$A"
      RELAY_IPC_BYTES=$area RELAY_BENCH_REGISTER=1 timeout 120 "$R" -n "$A" --timeout 115 -- out/bin/relay-bench \
        -x ipc -N 8 -A "$A" -m single --helper-devices "$helpers" --emulate-mesh 12 -t "$topo" \
        --baseline direct --in-place 0 -C all -r relay -b 1M -e 64M -f 4 -n 3 -w 1 --progress 0 \
        --csv "$o/p${pass}_area${area}_a$A.csv" > "$o/p${pass}_area${area}_a$A.log" 2>&1
      echo "-- exit $?"; grep -i "wrong" "$o/p${pass}_area${area}_a$A.log" | head -2
    done
  done
done
for pass in 1 2; do for area in 64M 256M; do
  echo "== speedups pass $pass area $area"
  python3 bench/mesh-speedups --tolerance 0.10 "$o"/p${pass}_area${area}_a*.csv
done; done
echo "== stages, area 256M"
for A in 2 4; do
  helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
  for coll in all-gather reduce-scatter all-to-all allreduce; do
    echo "== stages A=$A $coll 67108864" >> "$o/stages256.log"
    RELAY_IPC_BYTES=256M RELAY_HELPER_DEVICES=$helpers RELAY_IPC_EMULATE_MESH=12 timeout 60 \
      out/trace/relay-run -n "$A" --timeout 55 -- out/trace/relay_ipc_tests stages "$coll" 67108864 1 >> "$o/stages256.log" 2>&1
    echo "-- A=$A $coll exit $?"
  done
done
echo "== stages A=2 helper processes all-gather 67108864" >> "$o/stages256.log"
RELAY_IPC_BYTES=256M RELAY_IPC_EMULATE_MESH=12 timeout 60 \
  out/trace/relay-run -n 8 --timeout 55 -- out/trace/relay_ipc_tests stages all-gather 67108864 1 >> "$o/stages256.log" 2>&1
echo "-- helper processes exit $?"
mps off
cd "$OUT" && tar -czf sweep.tgz sweep && rm -rf sweep
