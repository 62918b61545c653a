#!/usr/bin/env bash
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run10.log") 2>&1
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=$PWD/python RELAY_C_LIBRARY_DIR=$B PYTHONUNBUFFERED=1 RELAY_TIMEOUT=30
source bench/common.sh
trap 'mps off' EXIT
mps on
timeout 90 "$B/relay-run" -n 2 --timeout 85 -- python3 out/gpu/hosted_cuda.py 2>&1 | grep -v "Warning\|warn" | tail -8; echo "exit ${PIPESTATUS[0]}"
mps off
