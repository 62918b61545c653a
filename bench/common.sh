# Shared by the scripts of bench/ and bench/tools/ (sourced, not run).
# shellcheck shell=bash

# machine_info FILE: date, host, GPUs and their topology, written to FILE.
machine_info() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi topo -m 2>/dev/null || true
    cat STAGE_INFO 2>/dev/null || true
  } >"$1" 2>&1
}

# round_robin RANKS GPUS: "0,1,...": the device of each rank, ranks dealt over the GPUs in turn.
round_robin() {
  seq 0 $(($1 - 1)) | awk -v g="$2" '{printf "%s%d", (NR > 1 ? "," : ""), $1 % g}'
}

# zeros N: "0,0,...", N zeros: the device of each of N hosted helpers, all on device 0.
zeros() {
  seq 1 "$1" | awk '{printf "%s0", (NR > 1 ? "," : "")}'
}

# gpu_build OUTDIR TARGETS...: the CUDA build of bench/mesh-emulate and bench/tools: finds NCCL
# (libnccl.so.2) anywhere on the machine and puts its folder on LD_LIBRARY_PATH, with the folder
# of .gpu-deps' libfmt where there is one (the programs load them at run time: NCCL when the nccl
# transport or baseline is asked for, transport/nccl/library.hpp); configures
# $GPU_BUILD_DIR, else build/ (Release, sm_90, no static tests, .gpu-deps as a prefix; CUDAFLAGS
# as the caller's environment has them, at the first configure) and builds TARGETS there, the
# output in OUTDIR/build.log. Run from the repository root; its status is the build's (the caller
# says what a failure does).
gpu_build() {
  local out=$1 dir=${GPU_BUILD_DIR:-build} lib
  shift
  lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
  if [[ -n "$lib" ]]; then
    LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
  fi
  if [[ -d .gpu-deps/lib ]]; then
    LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
    export LD_LIBRARY_PATH
  fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" >"$out/build.log" 2>&1 &&
    cmake --build "$dir" -j"$(nproc)" --target "$@" >>"$out/build.log" 2>&1
}

# floor_build OUTDIR BINARY [NVCC-FLAGS...]: the floor program (bench/tools/floor) built by nvcc
# on its own (it is no CMake target: it needs nothing of the library's build), the output
# appended to OUTDIR/build.log. Its status is the build's.
floor_build() {
  local out=$1 binary=$2
  shift 2
  nvcc -O3 -std=c++20 -arch=sm_90 -diag-suppress=2810 -Iinclude "$@" bench/tools/floor/floor.cu \
    -o "$binary" >>"$out/build.log" 2>&1
}

# mps on|off: the MPS daemon, where the machine has one, with no SM share set (every size must
# complete without one: issue 25). Idempotent; a caller that turns it on sets `trap 'mps off'
# EXIT`, so that the daemon never outlives the script.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mps_on=0
mps() {
  command -v nvidia-cuda-mps-control >/dev/null || return 0
  if [[ $1 == on && $mps_on == 0 ]]; then
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    unset CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    nvidia-cuda-mps-control -d && mps_on=1 && echo "== MPS on"
  elif [[ $1 == off && $mps_on == 1 ]]; then
    echo quit | nvidia-cuda-mps-control
    sleep 1  # the daemon's clients are gone before the next step starts
    mps_on=0
    echo "== MPS off"
  fi
}
