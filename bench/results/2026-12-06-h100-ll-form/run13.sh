#!/usr/bin/env bash
# GPU run 13 (not part of the project): prebuilt sm_90 binaries in out/bin (main with the ll
# kernel's second version and the pyfast merge). The suites with 2 and 8 processes, the failure
# scenarios, hosted helpers; the ll kernel's trace (first version's binary) and the pull's;
# relay against the ll floor, ll and pull forms, eager and replayed; relay.torch's per-call cost
# and the async, captured and torchcomms tests on CUDA.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run13.log") 2>&1
date -u
t0=$SECONDS
export B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
mps on
mkdir -p /tmp/l
st() { local name=$1 lim=$2 t=$SECONDS; shift 2; echo "== $name: $*"; timeout "$lim" "$@" >/tmp/l/$name.log 2>&1; local rc=$?; tail -${TAILN:-2} /tmp/l/$name.log; echo "-- $name: exit $rc, $((SECONDS - t)) s"; return $rc; }
R=$B/relay-run T=$B/relay_ipc_tests H6=0,0,0,0,0,0
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
RELAY_IPC_FORM=pull st property_8_pull 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused refuse_plan refuse_early mismatch stall; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
TAILN=3 st graph_2 60 "$R" -n 2 --timeout 55 -- "$T" graph 20 10
TAILN=3 st graph_8 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
st unaligned_2 30 "$R" -n 2 --timeout 25 -- "$T" unaligned
st unaligned_8 60 "$R" -n 8 --timeout 55 -- "$T" unaligned
st registration_8 60 "$R" -n 8 --timeout 55 -- "$T" registration
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st hosted_a2 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 150 20261221 /tmp/a2
TAILN=8 st hostpath_2 60 "$R" -n 2 --timeout 55 -- "$T" hostpath 1000 100
for form in auto pull; do
  for bytes in 4096 65536; do
    RELAY_IPC_FORM=$form timeout 30 "$R" -n 2 --timeout 25 -- "$B/relay_ipc_tests_trace" trace $bytes 0 2>&1 | grep -E "rank|FAIL"
  done
done
bench() {  # NAME [EXTRA...]
  local name=$1; shift
  st "$name" 30 "$R" -n 2 --timeout 25 -- "$B/relay-bench" -x ipc -N 2 -A 2 -m single -r direct \
    -C allreduce -d bfloat16 -b 4K -e 1M -f 4 -n 200 -w 20 --baseline floor-ll "$@"
}
for form in auto pull; do
  RELAY_IPC_FORM=$form bench bench_${form}_eager
  RELAY_IPC_FORM=$form bench bench_${form}_graph --graph 20
done
for f in /tmp/l/bench_*.log; do echo "== $f"; grep -E "^\[0\] +[0-9]" "$f" | cut -c1-220; done
mps off
OUT=/tmp/l/pyhost bash out/gpu/gpu-pyhost.sh
export RELAY_C_LIBRARY_DIR=$B PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
mps on
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12 timeout 200 python3 -m pytest -p no:cacheprovider -q -rs -k torchcomms tests/python/test_gpu.py > /tmp/l/torchcomms.log 2>&1; echo "torchcomms suite: exit $?"; tail -3 /tmp/l/torchcomms.log
mps off
export RELAY_TIMEOUT=120
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool TOOL --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for tool in racecheck memcheck; do
  st ${tool}_2 150 "$R" -n 2 --timeout 140 -- bash -c "${one/TOOL/$tool}" "$T" property 30 7
  grep -E "SUMMARY|Race reported" /tmp/l/${tool}_2.log | sort | uniq -c | head -4
done
cuobjdump --dump-resource-usage "$B/librelay_c_cuda.so" 2>&1 | grep -A1 "ipc_ll_kernel\|ipc_pull_kernel" | grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | head -6
tar -czf "$OUT/run13-logs.tgz" -C /tmp l
echo "== done in $((SECONDS - t0)) s"
