#!/usr/bin/env bash
# GPU call 10 of 2026-12-07 (not part of the project): run9's binaries; bench/mesh-emulate-ipc as
# committed (its own calibration; the sweep replayed by default), as a user runs it.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack6.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run10.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
MESH_IPC_PREBUILT=out/bin bench/mesh-emulate-ipc "$OUT/emulate" 12
cd "$OUT" && tar -czf run10.tgz emulate && rm -rf emulate
