#!/usr/bin/env bash
# relay on an AMD node in one command: an MI300X (gfx942) or MI350X (gfx950) machine with 8 GPUs
# and ROCm (its hipcc and clang, RCCL, rocminfo, rocm-smi), CMake 3.25, Ninja, Catch2 2 and {fmt}
# installed, and a ROCm build of torch for the Python suite.
#
#   tests/gpu/amd_run.sh [OUTDIR]           build, run every step, write OUTDIR
#                                           (default bench/results/<date>-<gfx>-rocm)
#   tests/gpu/amd_run.sh --dry-run [BUILD]  run nothing: check that every program the steps call
#                                           is built in BUILD (default build-amd) and starts
#
# Environment: STEPS (a regular expression of the step names to run, default every one), BUILD
# (the build folder, default build-amd), ROCM_PATH (default /opt/rocm), RELAY_RCCL_LIBRARY
# (default: the librccl.so.1 under ROCM_PATH), ARCH (default: rocminfo's first gfx9 agent).
#
# Steps, each a timed command with its log in OUTDIR:
#   build            CMake with ROCm's hipcc for ARCH (the programs below) and ROCm's clang for
#                    librelay_c_hip (ARCH only)
#   ipc_*            the ipc transport with 8 processes, one per GPU (relay-run --devices 0..7):
#                    the property suites (the plan forms, the stepped form, the fp8 wire,
#                    registered buffers), the graph tests (100 calls captured, 100 replays, staged
#                    and registered), registration, and the failure scenarios (a stall, refusals,
#                    a mismatch, a late rank, an exited and an aborting helper)
#   bench_rccl       relay-bench -x gpu over the 8 GPUs with RCCL's own collectives in the same
#                    process (--baseline nccl): all four collectives, A=2 and 4, fused, parallel
#                    and single, 4 KB-1 GB, every element checked
#   bench_ipc_rccl   relay-bench -x ipc in 8 processes, one per GPU, with RCCL's own collectives
#                    in the same processes (--baseline nccl: each group on an RCCL communicator of
#                    its own): all four collectives, A=2 and 4, fused, parallel and single,
#                    4 KB-1 GB, every element checked
#   bench_ipc_rccl_graph  the same from 4 KB to 64 MB, both sides replayed from graphs of 20
#                    captured calls (--graph 20)
#   python           tests/python/test_gpu.py on this node's ROCm torch (librelay_c_hip)
# OUTDIR holds what bench/results/ holds for a run: README.md (machine, date, commit, commands,
# each step's result), machine.txt, each step's log, relay-bench's rows (bench_rccl.csv,
# bench_ipc_rccl.csv, bench_ipc_rccl_graph.csv).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
ROCM_PATH=${ROCM_PATH:-/opt/rocm}
BUILD=${BUILD:-build-amd}
STEPS=${STEPS:-.}

dry_run=0
if [[ ${1:-} == --dry-run ]]; then
  dry_run=1
  BUILD=${2:-$BUILD}
fi

# The programs of the steps: the hipcc build's (no suffix, cmake/RelayGpu.cmake), relay-run and
# the C library.
IPC=$BUILD/tests/gpu/relay_ipc_tests_hip.dir/relay_ipc_tests_hip
BENCH=$BUILD/tools/relay_bench/relay_bench_hip.dir/relay_bench_hip
RUN=$BUILD/tools/relay-run
LIB=$BUILD/capi/librelay_c_hip.so

if ((dry_run)); then
  if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    echo "amd_run.sh --dry-run: $BUILD is not a configured build" >&2
    exit 1
  fi
  missing=0
  for p in "$IPC" "$BENCH" "$RUN"; do
    [[ -x $p ]] || {
      echo "missing: $p" >&2
      missing=1
    }
  done
  for f in "$LIB" tests/python/test_gpu.py; do
    [[ -f $f ]] || {
      echo "missing: $f" >&2
      missing=1
    }
  done
  ((missing)) && exit 1
  # Each program starts with the arguments its steps give (no GPU is needed to parse them).
  "$RUN" --version >/dev/null || exit 1
  "$BENCH" --version >/dev/null || exit 1
  # relay-bench's rank executors are compiled in (-x ipc, -x nccl), not stand-ins.
  cmake -DBENCH="$BENCH" -DRUN="$RUN" -P tests/tools/relay_bench/hip_rank_modes.cmake || exit 1
  "$IPC" no_such_scenario >/dev/null 2>&1 && {
    echo "$IPC accepted an unknown scenario" >&2
    exit 1
  }
  echo "amd_run.sh --dry-run: every program is built in $BUILD (relay_ipc_tests_hip," \
    "relay_bench_hip, relay-run, librelay_c_hip.so)"
  exit 0
fi

ARCH=${ARCH:-$("$ROCM_PATH/bin/rocminfo" 2>/dev/null | grep -o -m1 'gfx9[0-9a-f]*')}
if [[ -z $ARCH ]]; then
  echo "amd_run.sh: no gfx9 agent found by $ROCM_PATH/bin/rocminfo; set ARCH" >&2
  exit 1
fi
OUT=${1:-bench/results/$(date -u +%Y-%m-%d)-$ARCH-rocm}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
topology=mi300x
[[ $ARCH == gfx950 ]] && topology=mi350x
if [[ -z ${RELAY_RCCL_LIBRARY:-} ]]; then
  RELAY_RCCL_LIBRARY=$(find "$ROCM_PATH/" -name 'librccl.so.1' 2>/dev/null | head -1)
fi
export RELAY_RCCL_LIBRARY

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname), $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "commit: $(git rev-parse HEAD 2>/dev/null)"
  echo "architecture: $ARCH; RCCL: ${RELAY_RCCL_LIBRARY:-not found}"
  "$ROCM_PATH/bin/rocm-smi" --showproductname --showmeminfo vram 2>&1
  "$ROCM_PATH/bin/rocm-smi" --showtopo 2>&1
  cat "$ROCM_PATH/.info/version" 2>/dev/null
  "$ROCM_PATH/llvm/bin/clang++" --version 2>&1 | head -1
  python3 -c "import torch; print('torch', torch.__version__, 'hip', torch.version.hip)" 2>&1
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"

results=()
status=0
# step NAME LIMIT COMMAND...: runs it with its log in OUTDIR/NAME.log, records its result.
step() {
  local name=$1 limit=$2 rc=0 t0=$SECONDS
  shift 2
  [[ $name =~ $STEPS ]] || return 0
  echo "== $name: $*"
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1 || rc=$?
  tail -3 "$OUT/$name.log"
  local verdict=passed
  ((rc == 0)) || verdict="FAILED (exit $rc)"
  ((rc == 0)) || status=1
  results+=("| $name | \`$*\` | $verdict | $((SECONDS - t0)) s |")
  echo "== $name: $verdict, $((SECONDS - t0)) s"
}

step build 3600 bash -c "cmake -S . -B '$BUILD' -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DRELAY_GPU=HIP -DRELAY_HIPCC='$ROCM_PATH/bin/hipcc' -DRELAY_HIP_ARCH='$ARCH' \
  -DRELAY_HIP_CLANG_ARCHS= -DRELAY_HIP_LIBRARY_ARCHS='$ARCH' \
  -DRELAY_HIP_LIBRARY_CLANG='$ROCM_PATH/llvm/bin/clang++' && \
  cmake --build '$BUILD' --target relay_ipc_tests_hip relay_bench_hip relay_run relay_c_hip"
devices=0,1,2,3,4,5,6,7
run=("$RUN" -n 8 --devices "$devices")

step ipc_property 1000 "${run[@]}" --timeout 900 -- "$IPC" property 500
step ipc_property_stepped 1000 env RELAY_IPC_FORM=stepped "${run[@]}" --timeout 900 -- "$IPC" \
  property 500
step ipc_property_fp8 1000 "${run[@]}" --timeout 900 -- "$IPC" property_fp8 300
step ipc_property_registered 1000 "${run[@]}" --timeout 900 -- "$IPC" property_registered 500
step ipc_graph 1000 "${run[@]}" --timeout 900 -- "$IPC" graph 100 100
step ipc_graph_registered 1000 "${run[@]}" --timeout 900 -- "$IPC" graph_registered 100 100
step ipc_registration 150 "${run[@]}" --timeout 120 -- "$IPC" registration
for scenario in stall refused refuse_plan refuse_early mismatch late; do
  step "ipc_$scenario" 150 env RELAY_TIMEOUT=2 "${run[@]}" --timeout 120 -- "$IPC" "$scenario"
done
for scenario in exited abort; do
  step "ipc_$scenario" 150 env RELAY_TIMEOUT=10 "${run[@]}" --timeout 120 -- "$IPC" "$scenario"
done

step bench_rccl 7200 "$BENCH" -x gpu -N 8 --devices "$devices" -C all -A 2,4 \
  -m fused,parallel,single -b 4K -e 1G -f 4 -t "$topology" --baseline nccl \
  --csv "$OUT/bench_rccl.csv"

ipc_bench=("${run[@]}" --timeout 7000 -- "$BENCH" -x ipc -N 8 -C all -A "2,4"
  -m "fused,parallel,single" -t "$topology" --baseline nccl)
step bench_ipc_rccl 7200 "${ipc_bench[@]}" -b 4K -e 1G -f 4 --csv "$OUT/bench_ipc_rccl.csv"
step bench_ipc_rccl_graph 3600 "${ipc_bench[@]}" -b 4K -e 64M -f 4 --graph 20 \
  --csv "$OUT/bench_ipc_rccl_graph.csv"

step python 1800 env PYTHONPATH="$root/python" RELAY_C_LIBRARY_DIR="$root/$BUILD/capi" \
  python3 -m pytest -p no:cacheprovider -v -rs tests/python/test_gpu.py

{
  echo "# relay on $ARCH with ROCm, $(date -u +%Y-%m-%d)"
  echo
  echo "**Machine**: machine.txt. **Code**: commit $(git rev-parse --short HEAD 2>/dev/null)."
  echo "**Command**: \`tests/gpu/amd_run.sh\` (STEPS=$STEPS)."
  echo
  echo "| step | command | result | time |"
  echo "|---|---|---|---|"
  printf '%s\n' "${results[@]}"
  echo
  echo "Each step's output is in <step>.log; relay-bench's tables in bench_rccl.log and"
  echo "bench_ipc_rccl*.log (#wrong summed over every rank), their rows in the .csv files of the"
  echo "same names. What the numbers say is for whoever ran it to write here, and a row to add"
  echo "to bench/results/README.md."
} >"$OUT/README.md"
echo "results: $OUT"
exit $status
