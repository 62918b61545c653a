#!/usr/bin/env bash
# GPU call 12 of 2026-12-07 (not part of the project): run11's sanitizers on calls whose programs
# do spread a copy (run11's calls were too small to: a copy of one tile stays whole): the relay
# route's all-gather and all-to-all of 4 MiB at A = 2, hosted (relay-bench, checked, 3 calls: an
# own block of 128 tiles in two parts), paced at 12 GB/s and registered, then unpaced and staged
# (RELAY_IPC_FORM=stepped); compute-sanitizer on process 0 (rank 0 and the helpers it hosts).
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack6.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run12.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R=out/bin/relay-run
bench="-x ipc -N 8 -A 2 -m single --helper-devices 0,0,0,0,0,0 -C all-gather,all-to-all -r relay -b 4M -e 4M -n 2 -w 1 --baseline none --progress 0"
mkdir -p /tmp/l
for tool in memcheck racecheck; do
  opts="--tool $tool --error-exitcode 9"
  [[ $tool == racecheck ]] && opts="$opts --racecheck-report all --print-limit 40"
  one="case \$RELAY_RANK in 0) exec compute-sanitizer $opts \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
  echo "== $tool paced, registered"
  RELAY_IPC_EMULATE_MESH=12 RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=100 timeout 110 "$R" -n 2 --timeout 105 -- \
    env RELAY_BENCH_REGISTER=1 bash -c "$one" out/bin/relay-bench $bench --emulate-mesh 12 > /tmp/l/rc.log 2>&1; echo "exit $?"
  grep -E "SUMMARY|FAILED|wrong elements" /tmp/l/rc.log | sort | uniq -c | head -6
  cp /tmp/l/rc.log "/tmp/l/${tool}_paced.log"
  echo "== $tool stepped, staged"
  RELAY_IPC_FORM=stepped RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=100 timeout 110 "$R" -n 2 --timeout 105 -- \
    bash -c "$one" out/bin/relay-bench $bench > /tmp/l/rc.log 2>&1; echo "exit $?"
  grep -E "SUMMARY|FAILED|wrong elements" /tmp/l/rc.log | sort | uniq -c | head -6
  cp /tmp/l/rc.log "/tmp/l/${tool}_stepped.log"
done
rm -f /tmp/l/rc.log
tar -czf "$OUT/run12.tgz" -C /tmp l
