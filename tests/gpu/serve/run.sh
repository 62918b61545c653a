#!/usr/bin/env bash
# Serving ranks over the ipc transport on a machine with one NVIDIA GPU or more, 8 processes
# sharing the GPUs under MPS (where nvidia-cuda-mps-control exists): the random suite (A=2, A=4),
# graphs with serving ranks (A=2, A=4: capture, replays, a shape new under capture, a replay a
# serving rank cannot follow) and a serving rank killed mid-run. Logs go to $OUT (default
# ./gpu-serve); the last line says whether every step passed.
#
#   bash tests/gpu/serve/run.sh [CALLS] [K] [REPLAYS]
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/common.sh  # mps
OUT=${OUT:-$PWD/gpu-serve}
mkdir -p "$OUT"
CALLS=${1:-500} K=${2:-20} REPLAYS=${3:-20}
export NCCL_NVLS_ENABLE=0  # the machine's rule: no NVLink multicast
[[ -d .gpu-deps/lib ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -1; } \
  >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

echo "== build"
start=$SECONDS
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF \
  -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" >"$OUT/build.log" 2>&1 &&
  cmake --build build -j"$(nproc)" --target relay_serve_gpu_tests relay_run >>"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s"
T=build/tests/gpu/serve/relay_serve_gpu_tests RUN=build/tools/relay-run

status=0
failed_steps=()
step() {  # step NAME LIMIT COMMAND...: runs it, logs to $OUT/NAME.log, prints its tail and time
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  echo "== $name: $*"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  ((rc != 0)) && status=1 && failed_steps+=("$name")
  tail -"${TAILN:-4}" "$OUT/$name.log"
  echo "-- $name: exit $rc, $((SECONDS - t0)) s"
}
trap 'mps off' EXIT
trap 'exit 143' TERM

mps on
for A in 2 4; do
  TAILN=8 step "property_a${A}_mps" 300 "$RUN" -n 8 --timeout 290 -- "$T" property "$A" "$CALLS"
  TAILN=14 RELAY_TIMEOUT=10 step "graph_a${A}_mps" 300 "$RUN" -n 8 --timeout 290 -- "$T" graph \
    "$A" "$K" "$REPLAYS"
done
TAILN=12 RELAY_TIMEOUT=10 step killed_mps 120 "$RUN" -n 8 --timeout 110 -- "$T" killed 2
mps off
if ((status == 0)); then echo "== every step passed"; else echo "== FAILED steps: ${failed_steps[*]}"; fi
exit $status
