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

# step NAME LIMIT CMD...: a record script's step: CMD run within LIMIT seconds, its output in
# $OUT/l/NAME.log, whose last ${TAILN:-1} lines are shown with its exit status and seconds. Its
# status is CMD's (124: out of time).
step() {
  local name=$1 limit=$2 t=$SECONDS rc
  shift 2
  echo "== $name: $*"
  timeout "$limit" "$@" >"$OUT/l/$name.log" 2>&1
  rc=$?
  tail -"${TAILN:-1}" "$OUT/l/$name.log" | cut -c1-250
  echo "-- $name: exit $rc, $((SECONDS - t)) s"
  return $rc
}

# ipc_suites RUN TESTS: relay_ipc_tests (the binary TESTS) under relay-run (RUN), one step each:
# property with 2 and 8 processes; every failure scenario with 2 processes and refused, mismatch
# and late with 8; graphs and unaligned with 2 and 8; hosted helpers at A = 2 bit for bit against
# helper processes. The steps' names end in ${SUITE_TAG} where set. Ranks share the first GPU:
# run it under MPS (mps on). Its status is the number of steps that failed.
ipc_suites() {
  local run=$1 tests=$2 tag=${SUITE_TAG:+_$SUITE_TAG} failed=0 s
  step property_2$tag 60 "$run" -n 2 --timeout 55 -- "$tests" property 400 || ((++failed))
  step property_8$tag 90 "$run" -n 8 --timeout 85 -- "$tests" property 200 || ((++failed))
  for s in late refused refuse_plan refuse_early mismatch stall; do
    RELAY_TIMEOUT=2 step "${s}_2$tag" 30 "$run" -n 2 --timeout 25 -- "$tests" $s || ((++failed))
  done
  for s in refused mismatch late; do
    RELAY_TIMEOUT=2 step "${s}_8$tag" 40 "$run" -n 8 --timeout 35 -- "$tests" $s || ((++failed))
  done
  for s in 2 8; do
    step "graph_$s$tag" 90 "$run" -n $s --timeout 85 -- "$tests" graph 20 10 || ((++failed))
    step "unaligned_$s$tag" 60 "$run" -n $s --timeout 55 -- "$tests" unaligned || ((++failed))
  done
  step "record_a2$tag" 60 "$run" -n 8 --timeout 55 -- "$tests" hosted_record 2 150 20261221 \
    /tmp/relay-a2 || ((++failed))
  RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=8 step "hosted_a2$tag" 60 "$run" -n 2 \
    --timeout 55 -- "$tests" hosted 2 150 20261221 /tmp/relay-a2 || ((++failed))
  rm -f /tmp/relay-a2.*
  return $failed
}
