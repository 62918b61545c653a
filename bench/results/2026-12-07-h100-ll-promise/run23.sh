#!/usr/bin/env bash
# GPU run 23 (not part of the project): the ll-promise branch (rebased on main be96e35) against
# main, side by side, relay against the ll floor; its trace, suites, racecheck, memcheck; then
# cap.sh (mesh emulation over ipc: what caps the relay route) on the branch's binaries.
set -uo pipefail
cd "$(dirname "$0")/../.."
t00=$SECONDS
mkdir -p out && tar -xJf out/pack.tar.xz -C out
exec > >(tee "$OUT/run23.log") 2>&1
date -u
t0=$SECONDS
export B=$PWD/out/bin M=$PWD/out/main
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mps on
mkdir -p /tmp/l
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >/tmp/l/$name.log 2>&1; local rc=$?; tail -${TAILN:-1} /tmp/l/$name.log | cut -c1-250; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests TT=$B/relay_ipc_tests_trace H6=0,0,0,0,0,0
bench() {  # NAME LIBDIR [EXTRA...]
  local name=$1 lib=$2; shift 2
  LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH st "$name" 40 "$R" -n 2 --timeout 35 -- "$lib/relay-bench" -x ipc -N 2 -A 2 -m single -r direct \
    -C allreduce -d bfloat16 -b 4K -e 1M -f 4 -n 300 -w 30 --baseline floor-ll "$@"
}
export RELAY_IPC_FORM=auto
for pass in 1 2; do
  bench promise_eager_$pass $B
  bench main_eager_$pass $M
  bench promise_graph_$pass $B --graph 20
  bench main_graph_$pass $M --graph 20
done
unset RELAY_IPC_FORM
for f in /tmp/l/*_eager_* /tmp/l/*_graph_*; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220; done
# relay.torch against the C ABI making the same library calls (c_loop prepared: sync; async:
# relay_run_call_async + relay_comm_join_call), 4 KB, twice.
for pass in 1 2; do
  for entry in prepared async; do
    st c_loop_${entry}_$pass 30 "$R" -n 2 --timeout 25 -- "$B/c_loop_cuda" 4096 5000 300 $entry
  done
  RELAY_C_LIBRARY_DIR=$B PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 TAILN=8 st call_cost_$pass 60 "$R" -n 2 --timeout 55 -- \
    python3 bench/tools/call-cost/call_cost.py --device cuda --bytes 4096 --calls 3000 --warmup 200 \
    --what sync,async,torchcomms,fused
done
grep -h "c_loop\|call_cost" /tmp/l/c_loop_* /tmp/l/call_cost_* | grep "^\[0\]"
TAILN=4 st trace_4k 30 "$R" -n 2 --timeout 25 -- "$TT" trace 4096
TAILN=4 st trace_64k 30 "$R" -n 2 --timeout 25 -- "$TT" trace 65536
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused refuse_plan refuse_early mismatch stall; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
for s in refused mismatch late; do
  RELAY_TIMEOUT=2 st ${s}_8 40 "$R" -n 8 --timeout 35 -- "$T" $s
done
st graph_8 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
st graph_2 60 "$R" -n 2 --timeout 55 -- "$T" graph 20 10
st unaligned_8 60 "$R" -n 8 --timeout 55 -- "$T" unaligned
st unaligned_2 60 "$R" -n 2 --timeout 55 -- "$T" unaligned
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st hosted_a2 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 150 20261221 /tmp/a2
mps off
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool racecheck --racecheck-report all --print-limit 40 --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for what in "property 30 7" "refused" "mismatch"; do
  echo "== racecheck $what"
  RELAY_TIMEOUT=120 timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" $what > /tmp/l/rc.log 2>&1; echo "exit $?"
  grep -E "Race reported|Read Thread|Write Thread|SUMMARY" /tmp/l/rc.log | sort | uniq -c | sort -rn | head -12
  cp /tmp/l/rc.log "/tmp/l/racecheck_${what%% *}.log"
done
one=${one/racecheck --racecheck-report all --print-limit 40/memcheck}
echo "== memcheck property 30 7"
RELAY_TIMEOUT=120 timeout 150 "$R" -n 2 --timeout 140 -- bash -c "$one" "$T" property 30 7 2>&1 | grep -E "SUMMARY|every output"
cuobjdump --dump-resource-usage "$B/librelay_c_cuda.so" 2>&1 | grep -A1 "ipc_ll_kernel" | grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | head -6
tar -czf "$OUT/run23-logs.tgz" -C /tmp l
echo "== part 1 done in $((SECONDS - t0)) s"
left=$((575 - (SECONDS - t00)))
mkdir -p "$OUT/cap"
OUT=$OUT/cap CAP_DEADLINE=$left bash out/gpu/cap.sh out/bin > "$OUT/cap.log" 2>&1
echo "cap.sh: exit $?"
tail -45 "$OUT/cap.log"
