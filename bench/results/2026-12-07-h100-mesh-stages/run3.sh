#!/usr/bin/env bash
# GPU call 3 of 2026-12-07 (not part of the project): main ad9147d's binaries (out/old, as in
# run1.sh and run2.sh) against the change that spreads a rank's free local copy over its later
# stages (out/bin, out/trace), on one machine. 1. correctness of the change: the ipc suites that
# run stepped programs (property, registered, graphs, hosted bit for bit, paced); 2. the relay
# route on the emulated mesh (12 GB/s, hosted, registered, 256 MiB area), old and new
# alternated twice; 3. the new stage trace of the 64 MiB calls.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out/old && tar -xJf out/pack.tar.xz -C out && tar -xJf out/pack-old.tar.xz -C out/old
export NCCL_NVLS_ENABLE=0 RELAY_TIMEOUT=30
exec > >(tee "$OUT/run3.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
source bench/common.sh
trap 'mps off' EXIT
mps on
o=$OUT/run3; mkdir -p "$o"
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >"$o/$name.log" 2>&1; local rc=$?; tail -2 "$o/$name.log" | cut -c1-220; echo "-- $name: exit $rc, $((SECONDS - t)) s"; }
B=out/bin; export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
R=$B/relay-run T=$B/relay_ipc_tests
st property_2 60 $R -n 2 --timeout 55 -- $T property 300
st property_8 90 $R -n 8 --timeout 85 -- $T property 150
st property_registered_8 90 $R -n 8 --timeout 85 -- $T property_registered 150
st graph_registered_8 90 $R -n 8 --timeout 85 -- $T graph_registered 20 10
st hosted_record_a2 60 $R -n 8 --timeout 55 -- $T hosted_record 2 150 20261207 "$o/h2"
st hosted_a2 60 env RELAY_HELPER_DEVICES=0,0,0,0,0,0 $R -n 2 --timeout 55 -- $T hosted 2 150 20261207 "$o/h2"
st hosted_record_a4 60 $R -n 8 --timeout 55 -- $T hosted_record 4 150 20261207 "$o/h4"
st hosted_a4 60 env RELAY_HELPER_DEVICES=0,0,0,0 $R -n 4 --timeout 55 -- $T hosted 4 150 20261207 "$o/h4"
st paced 60 $R -n 2 --timeout 55 -- $T paced
st hosted_record_a2n 60 $R -n 8 --timeout 55 -- $T hosted_record 2 100 20261221 "$o/p2" native
st hosted_paced 60 env RELAY_IPC_EMULATE_MESH=12 RELAY_HELPER_DEVICES=0,0,0,0,0,0 $R -n 2 --timeout 55 -- $T hosted 2 100 20261221 "$o/p2" native
rm -f "$o"/h2.* "$o"/h4.* "$o"/p2.*
topo=mesh:12:4.39:0.08:2864
for pass in 1 2; do
  for which in old new; do
    d=out/bin; [[ $which == old ]] && d=out/old/bin
    for A in 2 4; do
      helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
      LD_LIBRARY_PATH=$PWD/$d:$LD_LIBRARY_PATH RELAY_IPC_BYTES=256M RELAY_BENCH_REGISTER=1 \
        st "p${pass}_${which}_a$A" 120 $d/relay-run -n "$A" --timeout 115 -- $d/relay-bench \
        -x ipc -N 8 -A "$A" -m single --helper-devices "$helpers" --emulate-mesh 12 -t "$topo" \
        --baseline direct --in-place 0 -C all -r relay -b 1M -e 64M -f 4 -n 5 -w 1 --progress 0 \
        --csv "$o/p${pass}_${which}_a$A.csv"
    done
  done
done
for pass in 1 2; do for which in old new; do
  echo "== speedups pass $pass $which"
  python3 bench/mesh-speedups --tolerance 0.10 "$o"/p${pass}_${which}_a*.csv
done; done
for A in 2 4; do
  helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
  for coll in all-gather all-to-all; do
    echo "== stages A=$A $coll 67108864" >> "$o/stages.log"
    RELAY_IPC_BYTES=256M RELAY_HELPER_DEVICES=$helpers RELAY_IPC_EMULATE_MESH=12 timeout 60 \
      out/trace/relay-run -n "$A" --timeout 55 -- out/trace/relay_ipc_tests stages "$coll" 67108864 1 >> "$o/stages.log" 2>&1
    echo "-- stages A=$A $coll exit $?"
  done
done
mps off
cd "$OUT" && tar -czf run3.tgz run3 && rm -rf run3
