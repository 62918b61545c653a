#!/usr/bin/env bash
# GPU call 5 of 2026-12-07 (not part of the project): the change's binaries (run4.sh's out/bin,
# with gpu_mesh_check) through the two scripts as a user runs them: bench/mesh-emulate-ipc (its
# own calibration, then the sweep; 256 MiB areas) and bench/mesh-stages-ipc.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run5.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
MESH_IPC_PREBUILT=out/bin bench/mesh-emulate-ipc "$OUT/emulate" 12
MESH_IPC_PREBUILT=out/bin MESH_IPC_TOPOLOGY=mesh:12:4.39:0.08:2864 bench/mesh-emulate-ipc "$OUT/emulate-fixed" 12
MESH_STAGES_PREBUILT=out/trace bench/mesh-stages-ipc "$OUT/stages" 12
cd "$OUT" && tar -czf run5.tgz emulate emulate-fixed stages && rm -rf emulate emulate-fixed stages
