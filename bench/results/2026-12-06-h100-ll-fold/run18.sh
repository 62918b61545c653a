#!/usr/bin/env bash
# GPU run 18 (not part of the project): prebuilt sm_90 binaries in out/bin, the ll kernel that
# waits for the entries and the words together (one trip, two barriers). The suites, the failure
# scenarios, hosted helpers, the torchcomms suite on CUDA; relay against the ll floor (eager and
# replayed, ll and pull); the device trace; racecheck and memcheck.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run18.log") 2>&1
date -u
t0=$SECONDS
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv
mps on
mkdir -p /tmp/l
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >/tmp/l/$name.log 2>&1; local rc=$?; tail -${TAILN:-1} /tmp/l/$name.log | cut -c1-250; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests H6=0,0,0,0,0,0
bench() {  # NAME [EXTRA...]
  local name=$1; shift
  st "$name" 30 "$R" -n 2 --timeout 25 -- "$B/relay-bench" -x ipc -N 2 -A 2 -m single -r direct \
    -C allreduce -d bfloat16 -b 4K -e 1M -f 4 -n 200 -w 20 --baseline floor-ll "$@"
}
RELAY_IPC_FORM=auto bench bench_ll_eager
RELAY_IPC_FORM=auto bench bench_ll_graph --graph 20
for f in /tmp/l/bench_*.log; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220; done
TAILN=3 st trace_4k 30 "$R" -n 2 --timeout 25 -- "$B/relay_ipc_tests_trace" trace 4096
TAILN=3 st trace_64k 30 "$R" -n 2 --timeout 25 -- "$B/relay_ipc_tests_trace" trace 65536
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
TAILN=4 st hostpath_2 60 "$R" -n 2 --timeout 55 -- "$T" hostpath 1000 100
RELAY_IPC_FORM=pull bench bench_pull_eager
mps off
export RELAY_C_LIBRARY_DIR=$B PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
mps on
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 timeout 200 python3 -m pytest -p no:cacheprovider -q -rs -k torchcomms tests/python/test_gpu.py > /tmp/l/torchcomms.log 2>&1; echo "torchcomms suite: exit $?"; tail -3 /tmp/l/torchcomms.log
grep -E "^\[0\] +[0-9]" /tmp/l/bench_pull_eager.log | cut -c1-220
for k in 1 2; do
  for py in old new; do
    if [[ $py == old ]]; then export PYTHONPATH=$PWD/out/oldpy/python; else export PYTHONPATH=$PWD/python; fi
    timeout 45 "$R" -n 2 --timeout 40 -- python3 bench/tools/call-cost/call_cost.py --device cuda --bytes 4096 \
      --calls 3000 --warmup 200 --what sync,async,torchcomms,fused > /tmp/l/call_cost_${py}_$k.log 2>&1
    echo "== python $py run $k"; grep -E "call_cost" /tmp/l/call_cost_${py}_$k.log | sed 's/^\[0\] //' | cut -c1-160
  done
done
timeout 20 "$R" -n 2 --timeout 15 -- "$B/c_loop_cuda" 4096 3000 200 prepared 2>&1 | grep c_loop | head -2
export PYTHONPATH=$PWD/python
mps off
export RELAY_TIMEOUT=120
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool TOOL --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for tool in racecheck memcheck; do
  st ${tool}_2 150 "$R" -n 2 --timeout 140 -- bash -c "${one/TOOL/$tool}" "$T" property 30 7
  grep -E "SUMMARY|Race reported" /tmp/l/${tool}_2.log | sort | uniq -c | head -4
done
RELAY_TIMEOUT=20 st racecheck_refused_2 100 "$R" -n 2 --timeout 90 -- bash -c "${one/TOOL/racecheck}" "$T" refused
grep -E "SUMMARY|Race reported" /tmp/l/racecheck_refused_2.log | sort | uniq -c | head -4
cuobjdump --dump-resource-usage "$B/librelay_c_cuda.so" 2>&1 | grep -A1 "ipc_ll_kernel" | grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | head -6
tar -czf "$OUT/run18-logs.tgz" -C /tmp l
echo "== done in $((SECONDS - t0)) s"
MESH_IPC_PREBUILT=$B MESH_DEADLINE=240 bash bench/mesh-emulate-ipc "$OUT/mesh" 12 > /tmp/mesh.log 2>&1; echo "mesh-emulate-ipc: exit $?"
grep -vE "^(\[|  )" /tmp/mesh.log | tail -40
echo "== all done in $((SECONDS - t0)) s"
