#!/usr/bin/env bash
# GPU call 1 of this record (not part of the project): the ll kernel with its rare paths out of
# line and one wait's code for every member (out/cp) against main 75dcf0b (out/ot): relay against
# the ll floor side by side (2 processes, eager and replayed, three passes; 8 processes in two
# groups of 4, replayed); the device trace of the change; the pair kernel's SASS of both; the
# change's suites and failure scenarios with 2 and 8 processes; racecheck and memcheck on rank 0
# of 2 (no MPS); relay.torch's host time per call (call_cost.py), main's Python (out/py-main)
# against the change's (out/py-new), with the C loop beside them.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
tar -xJf out/pack-cp.tar.xz -C out && tar -xJf out/pack-ot.tar.xz -C out
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
N=$PWD/out/cp M=$PWD/out/ot
export LD_LIBRARY_PATH=$N:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
mkdir -p "$OUT/l"
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >$OUT/l/$name.log 2>&1; local rc=$?; tail -"${TAILN:-1}" $OUT/l/$name.log | cut -c1-250; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$N/relay-run T=$N/relay_ipc_tests H6=0,0,0,0,0,0 LIMIT=${LIMIT:-570}
for b in cp ot; do
  cuobjdump -sass "$PWD/out/$b/relay_ipc_tests" 2>/dev/null | awk '/Function :/{p = /ipc_ll_kernelINS_8bfloat16ELj2E/} p' > "$OUT/sass_$b.txt"
  echo "== $b pair kernel (bf16): $(wc -l < "$OUT/sass_$b.txt") lines, $(grep -c 'STL' "$OUT/sass_$b.txt") STL, $(grep -c 'LDL' "$OUT/sass_$b.txt") LDL"
  cuobjdump --dump-resource-usage "$PWD/out/$b/relay_ipc_tests" 2>&1 | grep -A1 "ipc_ll_kernel" |
    grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | sort | uniq -c | sort -rn | head -8 | cut -c1-200
done
mps on
floor() {  # NAME DIR [EXTRA...]
  local name=$1 dir=$2; shift 2
  st "$name" 40 "$R" -n 2 --timeout 35 -- "$dir/relay-bench" -x ipc -N 2 -A 2 -m single -r direct \
    -C allreduce -d bfloat16 -b 4K -e 256K -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
for pass in 1 2 3; do
  floor new_graph_$pass "$N" --graph 20
  floor main_graph_$pass "$M" --graph 20
  floor new_eager_$pass "$N"
  floor main_eager_$pass "$M"
done
floor8() {  # NAME DIR
  st "$1" 60 "$R" -n 8 --timeout 55 -- "$2/relay-bench" -x ipc -N 8 -A 4 -m fused -r direct \
    -C allreduce -d bfloat16 -b 4K -e 64K -f 4 -n 200 -w 20 --baseline floor-ll --graph 20
}
for pass in 1 2; do
  floor8 new_a4_graph_$pass "$N"
  floor8 main_a4_graph_$pass "$M"
done
for f in $OUT/l/*_graph_* $OUT/l/*_eager_*; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220; done
if [[ -x $N/relay_ipc_tests_trace ]]; then
  for b in 4096 65536; do
    TAILN=4 st trace_new_$b 30 "$R" -n 2 --timeout 25 -- "$N/relay_ipc_tests_trace" trace $b
    TAILN=4 st trace_main_$b 30 "$R" -n 2 --timeout 25 -- "$M/relay_ipc_tests_trace" trace $b
  done
fi
# relay.torch: main's Python and this tree's over the change's library, with the C loop.
for pass in 1 2; do
  for entry in prepared async; do
    st c_loop_${entry}_$pass 30 "$R" -n 2 --timeout 25 -- "$N/c_loop_cuda" 4096 5000 300 $entry
  done
  for py in main new; do
    dir=$PWD/out/py-$py/python
    RELAY_C_LIBRARY_DIR=$N PYTHONPATH=$dir PYTHONUNBUFFERED=1 TAILN=8 st call_cost_${py}_$pass 60 "$R" -n 2 --timeout 55 -- \
      python3 "$dir/../bench/tools/call-cost/call_cost.py" --device cuda --bytes 4096 --calls 3000 --warmup 200 \
      --what sync,async,torchcomms,fused
  done
done
grep -h "c_loop\|call_cost" $OUT/l/c_loop_* $OUT/l/call_cost_* | grep "^\[0\]"
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused refuse_plan refuse_early mismatch stall; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
for s in refused mismatch late; do
  RELAY_TIMEOUT=2 st ${s}_8 40 "$R" -n 8 --timeout 35 -- "$T" $s
done
st graph_2 60 "$R" -n 2 --timeout 55 -- "$T" graph 20 10
st graph_8 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
st unaligned_2 60 "$R" -n 2 --timeout 55 -- "$T" unaligned
st unaligned_8 60 "$R" -n 8 --timeout 55 -- "$T" unaligned
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st hosted_a2 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 150 20261221 /tmp/a2
mps off
for tool in racecheck memcheck; do
  opts="--tool $tool --error-exitcode 9"
  [[ $tool == racecheck ]] && opts="$opts --racecheck-report all --print-limit 40"
  one="case \$RELAY_RANK in 0) exec compute-sanitizer $opts \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
  whats=("property 30 7" "refused" "unaligned")
  [[ $tool == memcheck ]] && whats=("property 30 7" "unaligned")
  for what in "${whats[@]}"; do
    ((SECONDS > LIMIT - 60)) && { echo "== $tool $what: skipped (call time)"; continue; }
    echo "== $tool $what"
    RELAY_TIMEOUT=60 timeout $((LIMIT - 20 - SECONDS)) "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" $what > $OUT/l/rc.log 2>&1; echo "exit $?"
    grep -E "Race reported|SUMMARY|every output|error" $OUT/l/rc.log | sort | uniq -c | sort -rn | head -6
    cp $OUT/l/rc.log "$OUT/l/${tool}_${what%% *}.log"
  done
done
rm -f /tmp/a2.* $OUT/l/rc.log
(cd "$OUT" && tar -czf run1.tgz l sass_cp.txt sass_ot.txt && rm -rf l sass_cp.txt sass_ot.txt)
echo "== done in $SECONDS s"
