#!/usr/bin/env bash
# GPU run 14 (not part of the project): prebuilt sm_90 binaries in out/bin (the ll kernel's third
# version: the judging beside the wait for the words). The suites, the failure scenarios, hosted
# helpers; relay against the ll floor (ll and pull forms, eager and replayed); relay.torch's
# per-call cost, main's Python before the pyfast merge (out/oldpy) and after, in the same run.
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run14.log") 2>&1
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
st property_2 60 "$R" -n 2 --timeout 55 -- "$T" property 400
st property_8 90 "$R" -n 8 --timeout 85 -- "$T" property 200
for s in late refused refuse_plan refuse_early mismatch stall; do
  RELAY_TIMEOUT=2 st ${s}_2 30 "$R" -n 2 --timeout 25 -- "$T" $s
done
st graph_8 90 "$R" -n 8 --timeout 85 -- "$T" graph 20 10
st unaligned_8 60 "$R" -n 8 --timeout 55 -- "$T" unaligned
st record_a2 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 150 20261221 /tmp/a2
RELAY_HELPER_DEVICES=$H6 RELAY_TIMEOUT=8 st hosted_a2 60 "$R" -n 2 --timeout 55 -- "$T" hosted 2 150 20261221 /tmp/a2
TAILN=4 st hostpath_2 60 "$R" -n 2 --timeout 55 -- "$T" hostpath 1000 100
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
export RELAY_C_LIBRARY_DIR=$B PYTHONUNBUFFERED=1 RELAY_TIMEOUT=60
for py in old new; do
  if [[ $py == old ]]; then export PYTHONPATH=$PWD/out/oldpy/python; else export PYTHONPATH=$PWD/python; fi
  for k in 1 2; do
    timeout 45 "$R" -n 2 --timeout 40 -- python3 bench/tools/call-cost/call_cost.py --device cuda --bytes 4096 \
      --calls 3000 --warmup 200 --what sync,async,torchcomms,fused > /tmp/l/call_cost_${py}_$k.log 2>&1
    echo "== python $py run $k"; grep -E "call_cost" /tmp/l/call_cost_${py}_$k.log | sed 's/^\[0\] //' | cut -c1-160
  done
done
timeout 20 "$R" -n 2 --timeout 15 -- "$B/c_loop_cuda" 4096 3000 200 prepared 2>&1 | grep c_loop | head -2
mps off
export RELAY_TIMEOUT=120
one='case $RELAY_RANK in 0) exec compute-sanitizer --tool TOOL --error-exitcode 9 "$0" "${@:1}";; *) exec "$0" "${@:1}";; esac'
for tool in racecheck memcheck; do
  st ${tool}_2 150 "$R" -n 2 --timeout 140 -- bash -c "${one/TOOL/$tool}" "$T" property 30 7
  grep -E "SUMMARY" /tmp/l/${tool}_2.log | head -2
done
tar -czf "$OUT/run14-logs.tgz" -C /tmp l
echo "== done in $((SECONDS - t0)) s"
