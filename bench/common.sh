# Shared by bench/gpu-sweep and bench/gpu-calibrate (sourced, not run).

# machine_info FILE: date, host, GPUs and their topology, written to FILE.
machine_info() {
  {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv
    nvidia-smi topo -m 2>/dev/null || true
    cat STAGE_INFO 2>/dev/null || true
  } >"$1" 2>&1
}

# round_robin RANKS GPUS: "0,1,...": the device of each rank, ranks dealt over the GPUs in turn.
round_robin() {
  seq 0 $(($1 - 1)) | awk -v g="$2" '{printf "%s%d", (NR > 1 ? "," : ""), $1 % g}'
}
