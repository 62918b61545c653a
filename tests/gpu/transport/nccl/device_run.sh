#!/usr/bin/env bash
# The GPU checks of the executor split and the nccl transport, in one go on a machine with 2 or
# more NVIDIA GPUs: the GPU suite, the nccl transport's property run, relay-bench -x nccl against
# NCCL (A = N direct; A = 2 relay where there are 3 GPUs or more), compute-sanitizer memcheck on a
# reduced suite. Logs go to $OUT (default ./gpu-run).
#
#   tests/gpu/transport/nccl/device_run.sh [BIN]   BIN: relay_gpu_tests, relay_nccl_tests and relay-bench
#                                        built for sm_90 (default: built here with CMake)
set -uo pipefail
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-$PWD/gpu-run}
mkdir -p "$OUT"
BIN=${1:-}
export NCCL_NVLS_ENABLE=0  # the machine's rule: no NVLink multicast
lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
[[ -n "$lib" ]] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[[ -d .gpu-deps/lib ]] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv; nvidia-smi topo -m; nvcc --version | tail -1; echo "libnccl: $lib"; } \
  >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
gpus=$(nvidia-smi -L | wc -l)

if [[ -z "$BIN" ]] || ! "$BIN/relay_nccl_tests" --help >/dev/null 2>&1 ||
  ! "$BIN/relay-bench" --version >/dev/null 2>&1; then
  echo "== building here (carried binaries missing or not runnable)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" >"$OUT/build.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target relay_gpu_tests relay_nccl_tests relay_bench \
      >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  mkdir -p build/gpu-bin
  cp build/tests/gpu/relay_gpu_tests build/tests/gpu/relay_nccl_tests \
    build/tools/relay_bench/relay-bench build/gpu-bin/
  BIN=build/gpu-bin
fi

status=0
echo "== GPU suite (after the executor split)"
timeout 200 "$BIN/relay_gpu_tests" --durations yes >"$OUT/gpu-tests.log" 2>&1 || status=1
tail -3 "$OUT/gpu-tests.log"

echo "== nccl transport: property run over $gpus GPUs"
timeout 400 "$BIN/relay_nccl_tests" -s -r compact >"$OUT/nccl-tests.log" 2>&1 || status=1
grep -E "nccl property run|passed|failed" "$OUT/nccl-tests.log" | tail -5

topo=${RELAY_TOPOLOGY:-switched:363.3:13.59:0.00}  # 2 x H200 calibration, 2026-11-29
bench() {
  echo "\$ relay-bench $*" | tee -a "$OUT/bench.txt"
  timeout 200 "$BIN/relay-bench" "$@" --baseline nccl -t "$topo" -b 4K -e 256M -f 4 -n 10 -w 3 \
    >>"$OUT/bench.txt" 2>&1 || status=1
}
echo "== relay-bench -x nccl against NCCL"
bench -x nccl -N "$gpus" -A "$gpus" -r direct -m single -C all
((gpus >= 3)) && bench -x nccl -N "$gpus" -A 2 -r relay -m single -C all
grep -vE "^#   " "$OUT/bench.txt" | tail -60

echo "== compute-sanitizer memcheck (reduced GPU suite)"
RELAY_GPU_TEST_ROUNDS=1 RELAY_PROPERTY_CASES=24 timeout 120 compute-sanitizer --tool memcheck \
  --error-exitcode 9 "$BIN/relay_gpu_tests" >"$OUT/memcheck.log" 2>&1 || status=1
tail -3 "$OUT/memcheck.log"
exit $status
