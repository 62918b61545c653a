#!/usr/bin/env bash
# Everything the GPU acceptance needs, in one go on a machine with an NVIDIA GPU: the GPU test
# suite, the kernel benchmark, a few runs of the collective example, then compute-sanitizer
# memcheck and racecheck on a reduced set. Logs go to $OUT (default ./gpu-run).
#
#   tests/gpu/device_run.sh [BIN]   BIN: a folder holding relay_gpu_tests, gpu_kernel_bench and
#                                   gpu_collective built for sm_90 (default: build/ here, built
#                                   first with CMake when it is missing or does not start)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-run}
mkdir -p "$OUT"
BIN=${1:-}

{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv; nvcc --version | tail -1; } >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

if [[ -z "$BIN" ]] || ! "$BIN/relay_gpu_tests" --help >/dev/null 2>&1; then
  echo "== building here (carried binaries missing or not runnable)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF ${CMAKE_PREFIX_PATH:+-DCMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH} \
    >"$OUT/build.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target relay_gpu_tests gpu_kernel_bench gpu_collective \
      >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  mkdir -p build/gpu-bin
  cp build/tests/gpu/relay_gpu_tests build/tools/gpu_kernel_bench build/tools/gpu_collective \
    build/gpu-bin/
  BIN=build/gpu-bin
fi

status=0
echo "== GPU test suite"
timeout 200 "$BIN/relay_gpu_tests" --durations yes >"$OUT/tests.log" 2>&1 || status=1
tail -4 "$OUT/tests.log"

echo "== kernel benchmark"
timeout 120 "$BIN/gpu_kernel_bench" --gib 1 >"$OUT/bench.md" 2>&1 || status=1
cat "$OUT/bench.md"

echo "== collective example"
runs=("--collective allreduce --dtype bf16 --active 2 --ranks 8"
  "--collective allreduce --dtype bf16 --active 2 --ranks 8 --engine memcpy --streams rank"
  "--collective allreduce --dtype float32 --active 4 --ranks 8 --op avg --in-place"
  "--collective reduce-scatter --dtype bf16 --active 4 --ranks 8"
  "--collective all-gather --dtype bf16 --active 2 --ranks 8 --mode single"
  "--collective all-to-all --dtype float32 --active 4 --ranks 8")
gpus=$(nvidia-smi -L | wc -l)
((gpus > 1)) && runs+=("--collective allreduce --dtype bf16 --active 2 --ranks 8 --devices $gpus")
for args in "${runs[@]}"; do
  echo "\$ gpu_collective $args --count 16777216"
  timeout 60 "$BIN/gpu_collective" $args --count 16777216 || status=1
  echo
done >"$OUT/collective.log" 2>&1
cat "$OUT/collective.log"

echo "== compute-sanitizer memcheck and racecheck (reduced set)"
for tool in memcheck racecheck; do
  RELAY_GPU_TEST_ROUNDS=1 RELAY_PROPERTY_CASES=24 timeout 150 compute-sanitizer --tool "$tool" \
    --error-exitcode 9 "$BIN/relay_gpu_tests" >"$OUT/$tool.log" 2>&1 || status=1
  tail -3 "$OUT/$tool.log"
done

exit $status
