#!/usr/bin/env bash
# GPU call 2 of this record (not part of the project): bench/mesh-emulate-ipc as committed, twice
# more on the change's binaries (out/new of run1), each with its own calibration.
set -uo pipefail
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p out && tar -xJf out/pack-pl.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/new:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run2.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2; do
  MESH_DEADLINE=120 MESH_IPC_PREBUILT=out/new bench/mesh-emulate-ipc "$OUT/emulate$pass" 12 |
    grep -E "^\| (all|reduce)|of 16 rows|latencies:|total"
done
cd "$OUT" && tar -czf run2.tgz emulate1 emulate2 && rm -rf emulate1 emulate2
