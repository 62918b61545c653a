#!/usr/bin/env bash
# What caps the relay route of mesh emulation over the ipc transport, on one
# H100 under MPS, in one call of about 150-200 s. Run from the repository root (bench/common.sh):
#
#   bash out/gpu/cap.sh out/bin        # BIN: relay-bench, relay-run, relay_ipc_tests, gpu_mesh_check
#
# Every configuration is one relay-run -n 2 -- relay-bench -x ipc -N 8 -A 2 (6 hosted helpers on
# device 0), --emulate-mesh 12, allreduce and all-gather at 16 and 64 MiB, the relay route against
# the direct route (both measured in the same invocation), -n 5 -w 1, checked. What differs:
#   old16_b2        RELAY_IPC_PACED_MOVE_KIB=16: a walker moves its 64 KiB tile as 4 x 16 KiB (the
#                   code before the fix), 2 walkers a push; buffers unregistered (the record)
#   fix64_b2        the fix (the tile at once), unregistered
#   reg_old16_b2    RELAY_BENCH_REGISTER=1 (no staged output, no exit copy), the old move
#   reg_fix64_b2    registered, the fix
#   reg_old16_b4    registered, the old move with 4 walkers a push (RELAY_IPC_PACED_BLOCKS=4)
#   reg_fix64_all   registered, the fix, all four collectives
#   reg_fix64_a4    registered, the fix, A = 4
#   reg_fix64_small registered, the fix, allreduce 64 KiB .. 4 MiB (the per-call intercept)
# relay_ipc_tests paced runs first; the configurations then run in the script's order, the most
# decisive first (one past the deadline is skipped); gpu_mesh_check last, if CAP_MESH_CHECK=1 and
# time is left. Logs and CSVs into $OUT; summary.md there (and on stdout): per configuration and row, measured and
# predicted time of both routes, and the speedups. The README beside it reads the outcomes.
set -uo pipefail
bin=$(cd "${1:?usage: cap.sh BINDIR}" && pwd)
out=${OUT:-/tmp/cap-out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
source bench/common.sh
trap 'mps off' EXIT
export LD_LIBRARY_PATH=$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # libcudart, libfmt beside them
R=$bin/relay-run bench=$bin/relay-bench T=$bin/relay_ipc_tests check=$bin/gpu_mesh_check
# The emulator's step latency and memory rate as gpu_mesh_check measured them on this H100
# (bench/results/2026-12-06-h100-ll-fold/mesh-emulate-ipc/accuracy.log); CAP_TOPOLOGY overrides.
topo=${CAP_TOPOLOGY:-mesh:12:4.39:0.08:2864}
deadline=${CAP_DEADLINE:-195}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >"$out/machine.txt" 2>&1

# run NAME LIMIT [ENV=V...] -- ARGS...: relay-bench under relay-run with ENV, output to NAME.log.
run() {
  local name=$1 limit=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  local left=$((deadline - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    echo "== $name: skipped (deadline)"
    return
  fi
  local t0=$SECONDS
  echo "== $name: ${envs[*]} $*"
  env "${envs[@]}" timeout "$limit" "$@" >"$out/$name.log" 2>&1
  echo "-- $name: exit $?, $((SECONDS - t0)) s"
}

bench_a() {  # bench_a A SIZES_FROM SIZES_TO COLLECTIVES CSV
  local A=$1 helpers
  helpers=$(seq 1 $((8 - A)) | awk '{printf "%s0", (NR > 1 ? "," : "")}')
  echo "$R" -n "$A" --timeout 55 -- "$bench" -x ipc -N 8 -A "$A" -m single \
    --helper-devices "$helpers" --emulate-mesh 12 -t "$topo" --baseline direct --in-place 0 \
    -C "$4" -r relay -b "$2" -e "$3" -f 4 -n 5 -w 1 --progress 0 --csv "$5"
}

mps on
export RELAY_TIMEOUT=30
# The fix's correctness first: a pair's paced all-gather never faster than its link, every byte.
echo "== paced"
timeout 40 "$R" -n 2 --timeout 35 -- "$T" paced >"$out/paced.log" 2>&1
echo "-- paced: exit $?"
tail -3 "$out/paced.log"
# NAME  MOVE_KIB  BLOCKS  REGISTER  A  FROM  TO  COLLECTIVES  LIMIT
configs=(
  "old16_b2 16 0 0 2 16M 64M allreduce,all-gather 40"
  "reg_fix64_b2 64 0 1 2 16M 64M allreduce,all-gather 40"
  "fix64_b2 64 0 0 2 16M 64M allreduce,all-gather 40"
  "reg_old16_b2 16 0 1 2 16M 64M allreduce,all-gather 40"
  "reg_fix64_all 64 0 1 2 16M 64M all 45"
  "reg_fix64_a4 64 0 1 4 16M 64M allreduce,all-gather 40"
  "reg_old16_b4 16 4 1 2 16M 64M allreduce,all-gather 40"
  "reg_fix64_small 64 0 1 2 64K 4M allreduce 30"
)
for c in "${configs[@]}"; do
  read -r name kib blocks reg A from to colls limit <<<"$c"
  # shellcheck disable=SC2046
  run "$name" "$limit" RELAY_IPC_PACED_MOVE_KIB="$kib" RELAY_IPC_PACED_BLOCKS="$blocks" \
    RELAY_BENCH_REGISTER="$reg" -- $(bench_a "$A" "$from" "$to" "$colls" "$out/$name.csv")
done
mps off
if [[ ${CAP_MESH_CHECK:-0} == 1 ]] && ((deadline - SECONDS > 45)); then
  echo "== gpu_mesh_check"
  timeout $((deadline - SECONDS - 5)) "$check" --gbps 12 >"$out/accuracy.log" 2>&1
  echo "-- gpu_mesh_check: exit $?"
  grep -E 'PASS|FAIL|topology' "$out/accuracy.log" | tail -8
fi

python3 - "$out" >"$out/summary.md" <<'EOF'
import csv, glob, os, sys
out = sys.argv[1]
print("| config | collective | A | size | relay us | relay pred | relay m/p | relay excess | "
      "direct us | direct pred | direct m/p | direct excess | speedup | pred speedup | meas/pred |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
    name = os.path.basename(path)[:-4]
    for r in csv.DictReader(open(path)):
        f = lambda k: float(r[k]) if r.get(k) not in (None, "", "n/a") else float("nan")
        t, p, bt, bp = f("time_us"), f("predicted_us"), f("baseline_time_us"), f(
            "direct_predicted_us")
        s, ps = f("speedup"), f("predicted_speedup_over_direct")
        print(f"| {name} | {r['collective']} | {r['active']} | {int(r['size_bytes']) >> 10}K | "
              f"{t:.0f} | {p:.0f} | {t / p:.2f} | {t - p:.0f} | {bt:.0f} | {bp:.0f} | "
              f"{bt / bp:.2f} | {bt - bp:.0f} | "
              f"{s:.2f} | {ps:.2f} | {s / ps:.3f} |")
EOF
cat "$out/summary.md"
for set in reg_fix64_all reg_fix64_a4 old16_b2; do
  [[ -e $out/$set.csv ]] || continue
  echo "== bench/mesh-speedups --tolerance 0.10 $set"
  python3 bench/mesh-speedups --tolerance 0.10 "$out/$set.csv" >"$out/speedups_$set.md" 2>&1
  tail -1 "$out/speedups_$set.md"
done
grep -H "wrong elements" "$out"/*.log
echo "== total $SECONDS s"
