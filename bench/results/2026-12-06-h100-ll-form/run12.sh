#!/usr/bin/env bash
# GPU run 12 (not part of the project): the ll and pull kernels' device trace (RELAY_IPC_TRACE=1).
set -uo pipefail
cd "$(dirname "$0")/../.."
exec > >(tee "$OUT/run12.log") 2>&1
B=$PWD/out/bin
export LD_LIBRARY_PATH=$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
source bench/common.sh
trap 'mps off' EXIT
mps on
for form in auto pull; do
  for bytes in 4096 65536; do
    RELAY_IPC_FORM=$form timeout 30 "$B/relay-run" -n 2 --timeout 25 -- "$B/relay_ipc_tests_trace" trace $bytes 0 2>&1 | grep -E "rank|FAIL"
  done
done
mps off
cuobjdump --dump-resource-usage "$B/librelay_c_cuda.so" 2>&1 | grep -A1 "ipc_ll_kernel\|ipc_pull_kernel" | grep -o "Function [^:]*\|REG:[0-9]* STACK:[0-9]* SHARED:[0-9]* LOCAL:[0-9]*" | paste - - | head -12
