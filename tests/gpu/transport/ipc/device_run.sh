#!/usr/bin/env bash
# The ipc transport's GPU checks and measurements in one go, on a machine with one NVIDIA GPU or
# more (8 processes share the GPUs round-robin). Logs go to $OUT (default ./gpu-run).
#
#   tests/gpu/transport/ipc/device_run.sh [CALLS] [K] [REPLAYS] [STEPS]   STEPS: a regular expression of the
#                                                              steps to run (default: all)
#
# Three parts, each step a timed command with its log:
#   1. without MPS (the driver time-slices the processes): the failure scenarios (a refusal
#      before any plan, another shape, a refused buffer, a stall past the timeout, an exited
#      helper, an aborting helper);
#   2. under MPS where nvidia-cuda-mps-control exists (no SM share set: every size must complete
#      anyway), its steps named *_mps: the failure scenarios again, the property suites, the graph
#      tests, calls larger than the area (*_pieces_mps), registration (8 processes; the failure scenarios, property, registered and graph
#      suites also with 2, steps *_2p_mps), hosted helpers (hosted_*_mps: 2 and 4 processes
#      hosting the other ranks of 8 on device 0), the host issue time, and the benchmarks: the floor program
#      (bench/tools/floor) and relay-bench -x ipc --baseline floor side by side, 2 and 8
#      processes, eager and replayed, staged and registered, the groups on split communicators
#      (--split), each form forced (pull, one-shot, stepped), every size from 4 KB to 1 GiB,
#      parallel mode (each group's plan on a copy of the job's communicator), and NCCL beside
#      the ipc ranks refused where they share the GPU (--baseline nccl);
#   3. without MPS again: compute-sanitizer memcheck and racecheck on reduced property runs,
#      memcheck on relay-bench over split communicators, and the long eager run that once
#      stalled (soak: 2 processes, 64 MB, RELAY_TIMEOUT=10).
# MPS is always stopped at the end. Built binaries in $BIN (relay_ipc_tests, relay-run,
# relay-bench, floor) are used as they are where they run here; otherwise everything is built
# (BUILD_TARGETS narrows the build).
set -uo pipefail
cd "$(dirname "$0")/../../../.."
source bench/common.sh  # mps, floor_build
OUT=${OUT:-$PWD/gpu-run}
mkdir -p "$OUT"
CALLS=${1:-500} K=${2:-100} REPLAYS=${3:-100} STEPS=${4:-.}
export NCCL_NVLS_ENABLE=0  # the machine's rule: no NVLink multicast
lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
[[ -n "$lib" ]] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -d .gpu-deps/lib ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
rt=$(find / -name 'libcudart.so.1[0-9]' -not -path '*/proc/*' 2>/dev/null | head -1)
[[ -n "$rt" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$rt")"
[[ -n "${BIN:-}" && -d "${BIN:-}/lib" ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$BIN/lib"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv; nvcc --version | tail -1; uname -r; } >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

BIN=${BIN:-}
T=build/tests/gpu/relay_ipc_tests RUN=build/tools/relay-run
BENCH=build/tools/relay_bench/relay-bench FLOOR=build/floor
runs_here() {  # every binary loads here (its libraries found) and relay-run starts
  for b in relay_ipc_tests relay-run relay-bench floor; do
    [[ -x "$BIN/$b" ]] && ! ldd "$BIN/$b" 2>&1 | grep -q 'not found' || return 1
  done
  "$BIN/relay-run" --version >/dev/null 2>&1
}
if [[ -n "$BIN" ]] && runs_here; then
  T=$BIN/relay_ipc_tests RUN=$BIN/relay-run BENCH=$BIN/relay-bench FLOOR=$BIN/floor
  echo "== prebuilt binaries in $BIN"
else
  echo "== build"
  inc=$(dirname "$(find / -name nccl.h -not -path '*/proc/*' 2>/dev/null | head -1)")
  start=$SECONDS
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DRELAY_NCCL_INCLUDE_DIR="$inc" \
    ${lib:+-DRELAY_NCCL_LIBRARY=$lib} >"$OUT/build.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target ${BUILD_TARGETS:-relay_ipc_tests relay_bench relay_run} \
      >>"$OUT/build.log" 2>&1 &&
    floor_build "$OUT" "$FLOOR" || { tail -40 "$OUT/build.log"; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi

status=0
failed_steps=()
step() {  # step NAME LIMIT COMMAND...: runs it, logs to $OUT/NAME.log, prints its tail and time
  local name=$1 limit=$2
  shift 2
  [[ $name =~ $STEPS ]] || return 0
  local t0=$SECONDS
  echo "== $name: $*"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  ((rc != 0)) && status=1 && failed_steps+=("$name")
  tail -${TAILN:-4} "$OUT/$name.log"
  echo "-- $name: exit $rc, $((SECONDS - t0)) s"
}

trap 'mps off' EXIT
trap 'exit 143' TERM

# The failure scenarios (ipc_tests.cpp: misbehave, leave). $1: a suffix for the step names;
# $2: the processes (default 8; with 2 the culprit is the pair's other member).
failures() {
  local n=${2:-8}
  TAILN=10 RELAY_TIMEOUT=2 step "stall$1" 60 "$RUN" -n "$n" --timeout 55 -- "$T" stall
  TAILN=10 RELAY_TIMEOUT=2 step "late$1" 60 "$RUN" -n "$n" --timeout 55 -- "$T" late
  for s in refused refuse_plan refuse_early mismatch; do
    TAILN=10 RELAY_TIMEOUT=10 step "$s$1" 60 "$RUN" -n "$n" --timeout 55 -- "$T" "$s"
  done
  for s in exited abort; do
    TAILN=9 RELAY_TIMEOUT=10 step "$s$1" 60 "$RUN" -n "$n" --timeout 55 -- "$T" "$s"
  done
}

# ---- 1. without MPS
failures ""

# ---- 2. under MPS
[[ $STEPS == . || $STEPS == *_mps* ]] && mps on
failures _mps
step property_mps 150 "$RUN" -n 8 --timeout 140 -- "$T" property "$CALLS"
RELAY_IPC_FORM=stepped step property_stepped_mps 150 "$RUN" -n 8 --timeout 140 -- "$T" property \
  "$CALLS" 11
# The plan's one-shot kernel (the automatic choice gives small allreduces to the pull form).
RELAY_IPC_FORM=one_shot step property_one_shot_mps 150 "$RUN" -n 8 --timeout 140 -- "$T" \
  property "$CALLS" 12
TAILN=6 step property_registered_mps 150 "$RUN" -n 8 --timeout 140 -- "$T" property_registered \
  "$CALLS"
step graph_mps 200 "$RUN" -n 8 --timeout 190 -- "$T" graph "$K" "$REPLAYS"
# Calls larger than a 64 KiB area, in pieces: the cases at 1x-9.5x the area, and the property
# and registered suites, most of whose calls the small area cuts.
RELAY_IPC_BYTES=65536 step pieces_mps 200 "$RUN" -n 8 --timeout 190 -- "$T" pieces
RELAY_IPC_BYTES=65536 step property_pieces_mps 150 "$RUN" -n 8 --timeout 140 -- "$T" property \
  "$CALLS" 13
RELAY_IPC_BYTES=65536 TAILN=6 step property_registered_pieces_mps 150 "$RUN" -n 8 --timeout 140 \
  -- "$T" property_registered "$CALLS" 14
TAILN=6 step graph_registered_mps 200 "$RUN" -n 8 --timeout 190 -- "$T" graph_registered "$K" \
  "$REPLAYS"
TAILN=6 step registration_mps 60 "$RUN" -n 8 --timeout 55 -- "$T" registration
# The same suites with 2 processes (the failure scenarios' culprit then the pair's other rank).
failures _2p_mps 2
step property_2p_mps 150 "$RUN" -n 2 --timeout 140 -- "$T" property "$CALLS"
TAILN=6 step property_registered_2p_mps 150 "$RUN" -n 2 --timeout 140 -- "$T" \
  property_registered "$CALLS"
step graph_2p_mps 200 "$RUN" -n 2 --timeout 190 -- "$T" graph "$K" "$REPLAYS"
TAILN=6 step graph_registered_2p_mps 200 "$RUN" -n 2 --timeout 190 -- "$T" graph_registered \
  "$K" "$REPLAYS"
TAILN=14 step hostpath_mps 90 "$RUN" -n 2 --timeout 85 -- "$T" hostpath 1000 100
# Hosted helpers (docs/hosted-helpers.md): 2 and 4 processes hosting the other ranks of 8, every
# helper on device 0 beside them. The suite's calls with 8 helper processes first (their outputs'
# digests), then the same calls hosted, bit for bit; graphs of one group of the processes; a
# hosting process that exits named with its hosted ranks; a helper device that does not exist;
# relay-bench --helper-devices.
for A in 2 4; do
  helpers=$(seq -s, 1 $((8 - A)) | sed 's/[0-9]*/0/g')
  digests="$OUT/hosted_ipc_a$A"
  step "hosted_record_a${A}_mps" 150 "$RUN" -n 8 --timeout 140 -- "$T" hosted_record "$A" "$CALLS" \
    20261221 "$digests"
  RELAY_HELPER_DEVICES=$helpers step "hosted_a${A}_mps" 150 "$RUN" -n "$A" --timeout 140 -- "$T" \
    hosted "$A" "$CALLS" 20261221 "$digests"
  RELAY_HELPER_DEVICES=$helpers step "hosted_graph_a${A}_mps" 200 "$RUN" -n "$A" --timeout 190 -- \
    "$T" graph "$K" "$REPLAYS"
  RELAY_HELPER_DEVICES=$helpers TAILN=6 step "hosted_graph_registered_a${A}_mps" 200 "$RUN" -n "$A" \
    --timeout 190 -- "$T" graph_registered "$K" "$REPLAYS"
done
RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=10 TAILN=9 step hosted_exited_mps 60 "$RUN" -n 2 \
  --timeout 55 -- "$T" exited
TAILN=4 step hosted_bad_device_mps 60 "$RUN" -n 2 --timeout 55 -- "$T" hosted_bad_device
TAILN=14 step hosted_bench2_mps 90 "$RUN" -n 2 --timeout 85 -- "$BENCH" -x ipc \
  --helper-devices 0,0,0,0,0,0 -C all -A 2 -m single -d bfloat16 -b 4K -e 4M -f 4 -n 20 -w 2 \
  --baseline none
TAILN=14 step hosted_bench4_graph_mps 90 "$RUN" -n 4 --timeout 85 -- "$BENCH" -x ipc \
  --helper-devices 0,0,0,0 -C all -A 4 -m single -d bfloat16 -b 4K -e 4M -f 4 -n 20 -w 2 \
  --graph 10 --baseline none
# The floor on its own, then beside relay in the same processes (relay-bench's baseline column).
TAILN=12 step floor2_mps 60 "$RUN" -n 2 --timeout 55 -- "$FLOOR" -A 2 -b 4K -e 16M -n 200 -g 20
TAILN=12 step floor8_mps 60 "$RUN" -n 8 --timeout 55 -- "$FLOOR" -A 2 -b 4K -e 16M -n 200 -g 20
small=(-C allreduce -d bfloat16 -b 4K -e 1M -f 2 -n 100 -w 10 --baseline floor
  -t switched:363.3:13.59:0.00)
TAILN=14 step bench2_mps 60 "$RUN" -n 2 --timeout 55 -- "$BENCH" -x ipc -N 2 -m single -r direct \
  -A 2 "${small[@]}"
TAILN=14 step bench2_graph_mps 60 "$RUN" -n 2 --timeout 55 -- "$BENCH" -x ipc -N 2 -m single \
  -r direct -A 2 --graph 20 "${small[@]}"
# The same with the graph's inputs left staged (not registered after capture).
RELAY_BENCH_GRAPH_INPUTS=0 TAILN=14 step bench2_graph_staged_mps 60 "$RUN" -n 2 --timeout 55 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct -A 2 --graph 20 "${small[@]}"
RELAY_BENCH_REGISTER=1 TAILN=14 step bench2_registered_mps 60 "$RUN" -n 2 --timeout 55 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct -A 2 "${small[@]}"
RELAY_BENCH_REGISTER=1 TAILN=14 step bench2_registered_graph_mps 60 "$RUN" -n 2 --timeout 55 -- \
  "$BENCH" -x ipc -N 2 -m single -r direct -A 2 --graph 20 "${small[@]}"
TAILN=14 step bench8_fused_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 -m fused -A 2 \
  "${small[@]}"
TAILN=14 step bench8_fused_graph_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 \
  -m fused -A 2 --graph 20 "${small[@]}"
TAILN=14 step bench8_a4_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 -m fused -A 4 \
  "${small[@]}"
TAILN=14 step bench8_a4_graph_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 -m fused \
  -A 4 --graph 20 "${small[@]}"
# The same groups, each on a communicator split from the job's (relay-bench --split): a group's
# entry meets its own members only.
RELAY_BENCH_REGISTER=1 TAILN=14 step bench8_split_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" \
  -x ipc -N 8 -m fused -A 2 -r direct --split 1 "${small[@]}"
TAILN=14 step bench8_split_graph_mps 90 "$RUN" -n 8 --timeout 85 -- "$BENCH" -x ipc -N 8 \
  -m fused -A 4 -r direct --split 1 --graph 20 "${small[@]}"
# Parallel mode: each group's plan on a copy of the job's communicator, all at once (every
# collective, A=2 and 4), eager and replayed.
par=(-N 8 -m parallel -A 2,4 -C all -d bfloat16 -b 4K -e 4M -f 4 -n 10 -w 2 --baseline none)
TAILN=14 step bench8_parallel_mps 120 "$RUN" -n 8 --timeout 115 -- "$BENCH" -x ipc "${par[@]}"
TAILN=14 step bench8_parallel_graph_mps 120 "$RUN" -n 8 --timeout 115 -- "$BENCH" -x ipc \
  --graph 10 "${par[@]}"
# NCCL beside the ipc ranks needs a device per rank: here 2 ranks share one, so --baseline nccl
# fails at the start on both, each naming the cause (the default, auto, runs none beside them).
refused='"$@" >"$0" 2>&1; rc=$?; cat "$0"; ((rc == 3)) && (($(grep -c "2 ranks share device" "$0") == 2))'
TAILN=4 step bench2_nccl_refused_mps 60 bash -c "$refused" "$OUT/bench2_nccl_refused.txt" "$RUN" \
  -n 2 --timeout 55 -- "$BENCH" -x ipc -N 2 -m single -r direct -C allreduce -b 4K -e 4K \
  --baseline nccl
# Every size from 4 KB to 1 GiB completes, no SM share set (the area sized by relay-bench).
sizes=(-C allreduce -A 2 -d bfloat16 -b 4K -e 1G -f 4 -n 3 -w 1 -t switched:363.3:13.59:0.00)
TAILN=14 step sizes2_mps 150 "$RUN" -n 2 --timeout 145 -- "$BENCH" -x ipc -N 2 -m single -r direct \
  "${sizes[@]}"
TAILN=14 step sizes8_mps 200 "$RUN" -n 8 --timeout 190 -- "$BENCH" -x ipc -N 8 -m fused \
  "${sizes[@]}"
# The same on split communicators: 4 pairs of one job, each dividing the device as the job's 8
# ranks do (environment::device_share), so that no pair's spinning kernel starves another's.
TAILN=14 step sizes8_split_mps 200 "$RUN" -n 8 --timeout 190 -- "$BENCH" -x ipc -N 8 -m fused \
  -r direct --split 1 "${sizes[@]}"
# Both forms forced, side by side with the floor (the model's constants are fitted from these).
forms=(-N 2 -m single -r direct -C allreduce -A 2 -d bfloat16 -b 4K -e 32M -f 2 -n 50 -w 5
  --baseline floor -t switched:363.3:13.59:0.00)
for f in pull one_shot stepped; do
  RELAY_IPC_FORM=$f TAILN=14 step "forms2_${f}_mps" 90 "$RUN" -n 2 --timeout 85 -- "$BENCH" -x ipc \
    "${forms[@]}"
  RELAY_IPC_FORM=$f TAILN=14 step "forms2_${f}_graph_mps" 90 "$RUN" -n 2 --timeout 85 -- "$BENCH" \
    -x ipc --graph 20 "${forms[@]}"
done
# The pull form against the stepped one with 8 processes, A=4 fused (each pull reads 3 inputs).
forms8=(-N 8 -m fused -C allreduce -A 4 -d bfloat16 -b 4K -e 16M -f 4 -n 30 -w 3 --graph 20
  --baseline floor -t switched:363.3:13.59:0.00)
for f in pull stepped; do
  RELAY_IPC_FORM=$f TAILN=14 step "forms8_a4_${f}_graph_mps" 120 "$RUN" -n 8 --timeout 115 -- \
    "$BENCH" -x ipc "${forms8[@]}"
done
mps off

# ---- 3. without MPS: the sanitizers, the long run of defect 7
# The sanitizers on ranks 0 (a helper or active, by case) and 3, the others plain: 8 sanitized
# processes time-slicing one GPU would take long. $0: the test binary, $1: the tool, $2: calls,
# $3: the scenario (property or property_registered).
sanitized='case $RELAY_RANK in 0|3) exec compute-sanitizer --tool "$1" --error-exitcode 9 "$0" "${3:-property}" "$2" 7;; *) exec "$0" "${3:-property}" "$2" 7;; esac'
export RELAY_TIMEOUT=120  # sanitized ranks are slow; their peers wait for them
TAILN=6 step memcheck 150 "$RUN" -n 8 --timeout 140 -- bash -c "$sanitized" "$T" memcheck 40
TAILN=6 step racecheck 100 "$RUN" -n 8 --timeout 90 -- bash -c "$sanitized" "$T" racecheck 10
# The graph test (4 calls captured, 7 replays: staged, registered after capture, staged again).
TAILN=6 step memcheck_graph 200 "$RUN" -n 8 --timeout 190 -- bash -c "$sanitized" "$T" memcheck 4 \
  graph
# relay-bench over split communicators, ranks 0 and 3 sanitized: the groups' transports made,
# registered, run and torn down beside the job's (A=2: 4 pairs; 4 KB-64 KB, one checked call).
split_sanitized='case $RELAY_RANK in 0|3) exec compute-sanitizer --tool memcheck --error-exitcode 9 "$@";; *) exec "$@";; esac'
RELAY_BENCH_REGISTER=1 TAILN=8 step memcheck_split 200 "$RUN" -n 8 --timeout 190 -- bash -c \
  "$split_sanitized" _ "$BENCH" -x ipc -N 8 -m fused -A 2 -r direct --split 1 -C allreduce \
  -d bfloat16 -b 4K -e 64K -f 4 -n 3 -w 1 -t switched:363.3:13.59:0.00
unset RELAY_TIMEOUT
# Defect 7's run: 2 processes time-slicing the GPU, 64 MB eager back to back, RELAY_TIMEOUT=10
# (SOAK_S seconds; the stall was seen after about 20,000 calls, some 90 s).
RELAY_TIMEOUT=10 TAILN=14 step soak $((${SOAK_S:-80} + 30)) "$RUN" -n 2 --timeout $((${SOAK_S:-80} + 25)) -- \
  "$T" soak $((64 << 20)) "${SOAK_S:-80}"
# One line that says whether every step passed (the steps' tails scroll past it).
if ((status == 0)); then echo "== every step passed"; else echo "== FAILED steps: ${failed_steps[*]}"; fi
exit $status
