#!/usr/bin/env bash
# The ipc transport's GPU checks and measurements in one go, on a machine with one NVIDIA GPU or
# more (8 processes share the GPUs round-robin): the property suite, the graph test, both again
# with registered buffers, the registration scenario, the host issue time (hostpath), the two
# failure scenarios, compute-sanitizer memcheck and racecheck on reduced property runs, and
# relay-bench -x ipc (eager and --graph, 8 and 2 processes, A=2 allreduce bf16 4 KB-64 KB; both
# forms forced; registered buffers; the fp8 wire against native), the fp8 property suite. Logs go to $OUT (default ./gpu-run).
#
#   tests/gpu/transport/ipc/device_run.sh [CALLS] [K] [REPLAYS] [STEPS]   STEPS: a regular expression of the
#                                                              steps to run (default: all)
# BUILD_TARGETS in the environment narrows the build (default: the tests, relay-bench, relay-run).
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-$PWD/gpu-run}
mkdir -p "$OUT"
CALLS=${1:-500} K=${2:-100} REPLAYS=${3:-100} STEPS=${4:-.}
export NCCL_NVLS_ENABLE=0  # the machine's rule: no NVLink multicast
lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
[[ -n "$lib" ]] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -d .gpu-deps/lib ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv; nvcc --version | tail -1; uname -r; } >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

echo "== build"
inc=$(dirname "$(find / -name nccl.h -not -path '*/proc/*' 2>/dev/null | head -1)")
start=$SECONDS
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DRELAY_NCCL_INCLUDE_DIR="$inc" \
  ${lib:+-DRELAY_NCCL_LIBRARY=$lib} >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$(nproc)" --target ${BUILD_TARGETS:-relay_ipc_tests relay_bench relay_run} \
    >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s"
T=build/tests/gpu/relay_ipc_tests
RUN=build/tools/relay-run
BENCH=build/tools/relay_bench/relay-bench
status=0
step() {  # step NAME LIMIT COMMAND...: runs it, logs to $OUT/NAME.log, prints its tail and time
  local name=$1 limit=$2
  shift 2
  [[ $name =~ $STEPS ]] || return 0
  local t0=$SECONDS
  echo "== $name: $*"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  ((rc != 0)) && status=1
  tail -${TAILN:-4} "$OUT/$name.log"
  echo "-- $name: exit $rc, $((SECONDS - t0)) s"
}
step property 150 "$RUN" -n 8 --timeout 140 -- "$T" property "$CALLS"
RELAY_IPC_FORM=stepped step property_stepped 150 "$RUN" -n 8 --timeout 140 -- "$T" property "$CALLS" 11
step property_fp8 150 "$RUN" -n 8 --timeout 140 -- "$T" property_fp8 "$CALLS"
step graph 150 "$RUN" -n 8 --timeout 140 -- "$T" graph "$K" "$REPLAYS"
TAILN=6 step property_registered 150 "$RUN" -n 8 --timeout 140 -- "$T" property_registered "$CALLS"
RELAY_IPC_FORM=stepped TAILN=6 step property_registered_stepped 150 "$RUN" -n 8 --timeout 140 -- \
  "$T" property_registered "$CALLS" 13
TAILN=6 step graph_registered 150 "$RUN" -n 8 --timeout 140 -- "$T" graph_registered "$K" "$REPLAYS"
TAILN=6 step registration 60 "$RUN" -n 8 --timeout 55 -- "$T" registration
# Host issue time of a prepared call (1,000, back to back in batches of 100), 2 ranks (on one
# GPU here: the times are the host's, the device only has to keep up), both forms.
TAILN=14 step hostpath 90 "$RUN" -n 2 --timeout 85 -- "$T" hostpath 1000 100
RELAY_IPC_FORM=stepped TAILN=14 step hostpath_stepped 90 "$RUN" -n 2 --timeout 85 -- "$T" hostpath 1000 100
TAILN=10 RELAY_TIMEOUT=2 step stall 60 "$RUN" -n 8 --timeout 55 -- "$T" stall
TAILN=10 RELAY_TIMEOUT=2 step refused 60 "$RUN" -n 8 --timeout 55 -- "$T" refused
# The sanitizers on ranks 0 (a helper or active, by case) and 3, the others plain: 8 sanitized
# processes time-slicing one GPU would take long. $0: the test binary, $1: the tool, $2: calls,
# $3: the scenario (property or property_registered).
sanitized='case $RELAY_RANK in 0|3) exec compute-sanitizer --tool "$1" --error-exitcode 9 "$0" "${3:-property}" "$2" 7;; *) exec "$0" "${3:-property}" "$2" 7;; esac'
export RELAY_TIMEOUT=120  # sanitized ranks are slow; their peers wait for them
TAILN=6 step memcheck 150 "$RUN" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" memcheck 40
TAILN=6 step memcheck_registered 150 "$RUN" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" \
  memcheck 40 property_registered
TAILN=6 step racecheck 100 "$RUN" -n 8 --timeout 90 -- bash -c "$sanitized" "$T" racecheck 10
TAILN=6 step memcheck_fp8 150 "$RUN" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" memcheck 30 \
  property_fp8
unset RELAY_TIMEOUT
sweep=(-C allreduce -A 2 -d bfloat16 -b 4K -e 64K -f 2 -n 20 -w 5 -t switched:363.3:13.59:0.00)
TAILN=14 step bench8 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 -m fused,single \
  "${sweep[@]}"
TAILN=14 step bench8_graph 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 \
  -m fused,single --graph 20 "${sweep[@]}"
TAILN=14 step bench2 45 "$RUN" -n 2 --timeout 40 -- "$BENCH" -x ipc -N 2 -m single -r direct \
  "${sweep[@]}"
# The fp8 wire against native on the relay route, 8 processes (timed on one shared GPU here: the
# rows show the wire taken, #wrong and the largest relative error, not link-bound speed).
for w in native fp8_e4m3; do
  extra=(); [[ $w != native ]] && extra=(--wire-threshold 0)
  TAILN=10 step "bench8_$w" 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 -m fused -r relay \
    -C allreduce,reduce-scatter -A 2 -d bfloat16 -b 64K -e 4M -f 4 -n 5 -w 2 --wire $w "${extra[@]}"
done
TAILN=14 step bench2_graph 45 "$RUN" -n 2 --timeout 40 -- "$BENCH" -x ipc -N 2 -m single \
  -r direct --graph 20 "${sweep[@]}"
RELAY_IPC_FORM=stepped TAILN=14 step bench2_stepped 45 "$RUN" -n 2 --timeout 40 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct "${sweep[@]}"
RELAY_IPC_FORM=one_shot TAILN=14 step bench2_one_shot 45 "$RUN" -n 2 --timeout 40 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct "${sweep[@]}"
# The one-shot form at sizes where its blocks (one per multiprocessor) walk each stage in rounds,
# in and out of place (relay-bench checks every output; exit 0 only with 0 wrong).
RELAY_IPC_FORM=one_shot TAILN=14 step bench2_one_shot_large 60 "$RUN" -n 2 --timeout 55 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct -C allreduce -A 2 -d bfloat16 -b 1M -e 32M -f 4 -n 5 \
  -w 2
# The same with registered buffers (RELAY_BENCH_REGISTER=1: no copy out where the output is
# registered, no copy in anywhere), eager and replayed.
RELAY_BENCH_REGISTER=1 TAILN=14 step bench2_registered 45 "$RUN" -n 2 --timeout 40 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct "${sweep[@]}"
RELAY_BENCH_REGISTER=1 TAILN=14 step bench2_registered_graph 45 "$RUN" -n 2 --timeout 40 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct --graph 20 "${sweep[@]}"
exit $status
