#!/usr/bin/env bash
# GPU run 1 (not part of the project): build, then the ipc failure scenarios (8 and 2 processes),
# calls in pieces, the fp8 kernels. Logs into $OUT/run1.log (one file).
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run1.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
inc=$(dirname "$(find / -name nccl.h -not -path '*/proc/*' 2>/dev/null | head -1)")
t0=$SECONDS
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DRELAY_BUILD_STATIC_TESTS=OFF -DRELAY_BUILD_TOOLS=ON \
  -DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DRELAY_NCCL_INCLUDE_DIR="$inc" >/tmp/cfg.log 2>&1 ||
  { tail -30 /tmp/cfg.log; exit 1; }
cmake --build build -j"$(nproc)" --target relay_ipc_tests relay_run relay_gpu_tests >/tmp/build.log 2>&1 ||
  { grep -E "error" /tmp/build.log | head -30; tail -20 /tmp/build.log; exit 1; }
echo "== built in $((SECONDS - t0)) s"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$(find "$PWD/.gpu-deps/lib" -name 'libfmt.so*' -printf '%h\n' | head -1)"
source bench/common.sh
trap 'mps off' EXIT
mps on
T=build/tests/gpu/relay_ipc_tests R=build/tools/relay-run
st() { local name=$1 t=$SECONDS; shift; echo "== $name"; timeout 120 "$@" >/tmp/step.log 2>&1; local rc=$?; tail -${TAILN:-3} /tmp/step.log; echo "-- $name: exit $rc, $((SECONDS - t)) s"; }
for n in 8 2; do
  for s in refused refuse_plan refuse_early mismatch; do
    TAILN=10 RELAY_TIMEOUT=10 st "${s}_${n}p" "$R" -n $n --timeout 55 -- "$T" $s
  done
  for s in late stall; do
    TAILN=10 RELAY_TIMEOUT=2 st "${s}_${n}p" "$R" -n $n --timeout 55 -- "$T" $s
  done
done
RELAY_IPC_BYTES=65536 st pieces_8p "$R" -n 8 --timeout 110 -- "$T" pieces
RELAY_IPC_BYTES=65536 st property_pieces_8p "$R" -n 8 --timeout 110 -- "$T" property 150 13
RELAY_IPC_BYTES=65536 TAILN=6 st registered_pieces_8p "$R" -n 8 --timeout 110 -- "$T" property_registered 150 14
st property_fp8_8p "$R" -n 8 --timeout 110 -- "$T" property_fp8 150
st property_8p "$R" -n 8 --timeout 110 -- "$T" property 150
mps off
TAILN=4 st gpu_fp8 build/tests/gpu/relay_gpu_tests "[fp8]"
echo "== done in $((SECONDS - t0)) s"
