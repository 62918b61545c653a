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

# gpu_build OUTDIR TARGETS...: the CUDA build of bench/mesh-emulate and bench/tools: finds NCCL
# (libnccl.so.2, nccl.h) anywhere on the machine and puts its folder on LD_LIBRARY_PATH, with the
# folder of .gpu-deps' libfmt where there is one (the programs load them at run time); configures
# $GPU_BUILD_DIR, else build/ (Release, sm_90, no static tests, .gpu-deps as a prefix; CUDAFLAGS
# as the caller's environment has them, at the first configure) and builds TARGETS there, the
# output in OUTDIR/build.log. Run from the repository root; its status is the build's (the caller
# says what a failure does).
gpu_build() {
  local out=$1 dir=${GPU_BUILD_DIR:-build} lib inc
  shift
  lib=$(find / -name 'libnccl.so.2' -not -path '*/proc/*' 2>/dev/null | head -1)
  inc=$(dirname "$(find / -name nccl.h -not -path '*/proc/*' 2>/dev/null | head -1)")
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
    -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DRELAY_NCCL_INCLUDE_DIR="$inc" \
    ${lib:+-DRELAY_NCCL_LIBRARY=$lib} >"$out/build.log" 2>&1 &&
    cmake --build "$dir" -j"$(nproc)" --target "$@" >>"$out/build.log" 2>&1
}
