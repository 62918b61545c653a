#!/usr/bin/env bash
# tests/python on a GPU machine (the device tool's H200): test_gpu.py with 8 processes sharing
# the GPU under MPS, then relay.torch.bench on CUDA tensors. Logs go to $OUT (or /tmp/relay-gpu).
#
#   bash tests/python/gpu_run.sh [LIBDIR]
#   RELAY_GPU_K=torchcomms bash tests/python/gpu_run.sh     # pytest -k: only the torchcomms tests
#
# LIBDIR: a folder holding a librelay_c_cuda.so built elsewhere; without one, or where it does not
# load, the library is built here (build-gpu/, CMake and nvcc).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/relay-gpu}
mkdir -p "$out"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
export RELAY_C_LIBRARY_DIR=${1:-$PWD/build-gpu/capi}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
} | tee "$out/machine.txt"
if ! python3 -c "import torch, relay; relay.library('cuda')" 2>"$out/load.txt"; then
  echo "building librelay_c_cuda here ($(head -c 300 "$out/load.txt"))"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_BUILD_TESTS=OFF \
    -DRELAY_BUILD_EXAMPLES=OFF -DRELAY_GPU=CUDA >"$out/build.txt" 2>&1 &&
    cmake --build build-gpu --target relay_c_cuda >>"$out/build.txt" 2>&1 || {
    tail -30 "$out/build.txt"
    exit 1
  }
  export RELAY_C_LIBRARY_DIR=$PWD/build-gpu/capi
fi
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && mps=1 || mps=0
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12
echo "MPS: $mps" | tee -a "$out/machine.txt"
rc=0
timeout 600 python3 -m pytest -p no:cacheprovider -v -s -rs ${RELAY_GPU_K:+-k "$RELAY_GPU_K"} \
  tests/python/test_gpu.py 2>&1 |
  tee "$out/test_gpu.log" || rc=1
timeout 90 python3 -m torch.distributed.run --nproc-per-node 8 -m relay.torch.bench --device cuda \
  --backend gloo --transport-bytes 256M -C allreduce,all-gather -A 2,4 -b 256K -e 16M -f 4 \
  -n 10 -w 3 2>&1 |
  grep -v "^W\|Warning\|warnings.warn" | tee "$out/bench.txt" || rc=1
((mps)) && echo quit | nvidia-cuda-mps-control
exit $rc
