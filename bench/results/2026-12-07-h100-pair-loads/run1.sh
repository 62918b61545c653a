#!/usr/bin/env bash
# GPU call 1 of this record (not part of the project): the change (out/new: two sources' loads in
# flight in a reduction's tile, the ll kernel's last look loaded with the peer's entry, the cost
# model's divided devices) against main d75a247 (out/main): bench/mesh-emulate-ipc on each; side
# by side, the small allreduce against the ll floor and the emulated mesh's reduce-scatter at A = 2
# (its last stage's sums); the kernels' registers and the ll kernel's SASS; the change's suites and
# failure scenarios; racecheck and memcheck (rank 0 of 2, no MPS) of the ll kernel and of a
# reduce-scatter whose last stage sums pairs.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p out && tar -xJf out/pack-pl.tar.xz -C out
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
N=$PWD/out/new M=$PWD/out/main
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
mkdir -p "$OUT/l"
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >$OUT/l/$name.log 2>&1; local rc=$?; tail -"${TAILN:-1}" $OUT/l/$name.log | cut -c1-250; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$N/relay-run T=$N/relay_ipc_tests H6=0,0,0,0,0,0 LIMIT=${LIMIT:-560}  # LIMIT: the call's seconds
# bench/mesh-emulate-ipc as committed, on the change's binaries (its own calibration, the sweep
# replayed, the model pricing each rank on its share of the divided device), as a user runs it.
MESH_DEADLINE=240 MESH_IPC_PREBUILT=out/new bench/mesh-emulate-ipc "$OUT/emulate" 12
mps on
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused mismatch; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
for s in late refused; do
  RELAY_TIMEOUT=2 st ${s}_8 40 "$R" -n 8 --timeout 35 -- "$T" $s
done
st graph_2 60 "$R" -n 2 --timeout 55 -- "$T" graph 20 10
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st hosted_a2 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 150 20261221 /tmp/a2
floor() {  # NAME DIR [EXTRA...]
  local name=$1 dir=$2; shift 2
  st "$name" 40 "$R" -n 2 --timeout 35 -- "$dir/relay-bench" -x ipc -N 2 -A 2 -m single -r direct \
    -C allreduce -d bfloat16 -b 4K -e 256K -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
for pass in 1 2; do
  floor new_eager_$pass "$N"
  floor main_eager_$pass "$M"
  floor new_graph_$pass "$N" --graph 20
  floor main_graph_$pass "$M" --graph 20
done
for f in $OUT/l/*_eager_* $OUT/l/*_graph_*; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220; done
# The same on main's binaries (its model without divided devices), for the side by side.
mps off
MESH_DEADLINE=120 MESH_IPC_PREBUILT=out/main bench/mesh-emulate-ipc "$OUT/emulate_main" 12
mps on
sums() {  # NAME DIR COLLECTIVE
  RELAY_BENCH_REGISTER=1 RELAY_IPC_BYTES=256M st "$1" 60 "$R" -n 2 --timeout 55 -- "$2/relay-bench" \
    -x ipc -N 8 -A 2 -m single --helper-devices $H6 --emulate-mesh 12 -t mesh:12:9.07:0.11:2868:16.15 \
    --baseline direct --in-place 0 -C "$3" -r relay -b 16M -e 64M -f 4 -n 5 -w 1 --graph 10 \
    --progress 0 --csv "$OUT/$1.csv"
}
for pass in 1 2; do
  sums new_reduce-scatter_$pass "$N" reduce-scatter
  sums main_reduce-scatter_$pass "$M" reduce-scatter
done
for f in "$OUT"/*_reduce-scatter_*.csv; do
  echo "== $f"; cut -d, -f1,2,10,14,18,21,27 "$f"
done
mps off
for b in new main; do
  echo "== $b: registers"
  cuobjdump --dump-resource-usage "$PWD/out/$b/relay_ipc_tests" 2>&1 | grep -A1 "ipc_ll_kernel\|ipc_step_kernel" |
    grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | sort | uniq -c | sort -rn | head -12 | cut -c1-200
done
cuobjdump -sass "$N/relay_ipc_tests" 2>/dev/null | awk '/Function :/{p = /ipc_ll_kernel/} p' > $OUT/l/ll_sass.txt
wc -l $OUT/l/ll_sass.txt
for tool in racecheck memcheck; do
  opts="--tool $tool --error-exitcode 9"
  [[ $tool == racecheck ]] && opts="$opts --racecheck-report all --print-limit 40"
  one="case \$RELAY_RANK in 0) exec compute-sanitizer $opts \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
  for what in "property 30 7"; do
    ((SECONDS > LIMIT - 80)) && { echo "== $tool $what: skipped (call time)"; continue; }
    echo "== $tool $what"
    RELAY_TIMEOUT=60 timeout $((LIMIT - 20 - SECONDS)) "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" $what > $OUT/l/rc.log 2>&1; echo "exit $?"
    grep -E "Race reported|SUMMARY|every output|error" $OUT/l/rc.log | sort | uniq -c | sort -rn | head -6
    cp $OUT/l/rc.log "$OUT/l/${tool}_${what%% *}.log"
  done
  ((SECONDS > LIMIT - 80)) && { echo "== $tool relay-bench: skipped (call time)"; continue; }
  echo "== $tool relay-bench reduce-scatter 4 MiB, A = 2 hosted (stepped, checked)"
  RELAY_IPC_FORM=stepped RELAY_TIMEOUT=60 timeout $((LIMIT - 20 - SECONDS)) "$R" -n 2 --timeout 140 -- bash -c "$one" "$N/relay-bench" \
    -x ipc -N 8 -A 2 -m single --helper-devices $H6 --in-place 0 -C reduce-scatter -r relay \
    -b 4M -e 4M -n 3 -w 1 --progress 0 > $OUT/l/rc.log 2>&1; echo "exit $?"
  grep -E "Race reported|SUMMARY|wrong|error" $OUT/l/rc.log | sort | uniq -c | sort -rn | head -6
  cp $OUT/l/rc.log "$OUT/l/${tool}_bench_rs.log"
done
rm -f /tmp/a2.* /tmp/a4.* $OUT/l/rc.log
(cd "$OUT" && tar -czf run1.tgz l emulate emulate_main && rm -rf l emulate emulate_main)
echo "== done in $SECONDS s"
