#!/usr/bin/env bash
# GPU call 11 of 2026-12-07 (not part of the project): compute-sanitizer on rank 0 of the two ipc
# changes (run6's binaries: main 918de11's code): racecheck and memcheck of the stepped form
# (RELAY_IPC_FORM=stepped: every call's program with its free local copies spread) and of the
# paced form (racecheck: the paced test; memcheck: the hosted suite paced at A = 2), 2 processes,
# no MPS.
set -uo pipefail
cd "$(dirname "$0")/../../.."
mkdir -p out && tar -xJf out/pack6.tar.xz -C out
export LD_LIBRARY_PATH=$PWD/out/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
exec > >(tee "$OUT/run11.log") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R=out/bin/relay-run T=out/bin/relay_ipc_tests
mkdir -p /tmp/l
timeout 60 "$R" -n 8 --timeout 55 -- "$T" hosted_record 2 40 20261221 /tmp/l/a2 native | tail -1
t0=$SECONDS
for tool in racecheck memcheck; do
  opts="--tool $tool --error-exitcode 9"
  [[ $tool == racecheck ]] && opts="$opts --racecheck-report all --print-limit 40"
  one="case \$RELAY_RANK in 0) exec compute-sanitizer $opts \"\$0\" \"\${@:1}\";; *) exec \"\$0\" \"\${@:1}\";; esac"
  whats=("property 20 7" "paced")
  [[ $tool == memcheck ]] && whats=("property 20 7")
  for what in "${whats[@]}"; do
    echo "== $tool $what (stepped)"
    RELAY_IPC_FORM=stepped RELAY_TIMEOUT=120 timeout 130 "$R" -n 2 --timeout 125 -- bash -c "$one" "$T" $what > /tmp/l/rc.log 2>&1; echo "exit $?"
    grep -E "Race reported|SUMMARY|every output|never faster" /tmp/l/rc.log | sort | uniq -c | head -8
    cp /tmp/l/rc.log "/tmp/l/${tool}_${what%% *}.log"
  done
  [[ $tool == racecheck ]] && continue
  echo "== $tool hosted paced A = 2 (at $((SECONDS - t0)) s)"
  RELAY_IPC_EMULATE_MESH=12 RELAY_HELPER_DEVICES=0,0,0,0,0,0 RELAY_TIMEOUT=120 timeout 130 "$R" -n 2 --timeout 125 -- \
    bash -c "$one" "$T" hosted 2 40 20261221 /tmp/l/a2 native > /tmp/l/rc.log 2>&1; echo "exit $?"
  grep -E "Race reported|SUMMARY|every output" /tmp/l/rc.log | sort | uniq -c | head -8
  cp /tmp/l/rc.log "/tmp/l/${tool}_hosted.log"
done
rm -f /tmp/l/a2.* /tmp/l/rc.log
tar -czf "$OUT/run11.tgz" -C /tmp l
