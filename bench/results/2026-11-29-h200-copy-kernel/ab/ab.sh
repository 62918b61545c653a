#!/usr/bin/env bash
# A/B: relay-bench with and without the copy kernel's streaming hints, side by side.
set -uo pipefail
out=$1; mkdir -p $out
P=-DCMAKE_PREFIX_PATH=$PWD/.gpu-deps
for v in hints:1 plain:0; do
  n=${v%%:*}; h=${v#*:}
  cmake -S . -B build-$n -G Ninja -DCMAKE_BUILD_TYPE=Release -DRELAY_GPU=CUDA -DRELAY_BUILD_TESTS=OFF $P \
    "-DCMAKE_CUDA_FLAGS=-DRELAY_GPU_COPY_HINTS=$h" > $out/build-$n.log 2>&1 &&
  cmake --build build-$n -j16 --target relay_bench >> $out/build-$n.log 2>&1 || { tail -20 $out/build-$n.log; exit 1; }
done
for round in 1 2; do
for n in hints plain; do
  timeout 150 build-$n/examples/relay_bench/relay-bench -x gpu --devices 0,0,0,0,0,0,0,0 \
    -C allreduce,reduce-scatter,all-gather -A 2,4 -m fused,single -r relay --baseline direct \
    -t h200-nvswitch -b 1M -e 256M -f 4 -n 10 -w 3 --csv $out/$n-$round.csv > /dev/null 2>&1
  echo "$n round $round exit $?"
done; done
