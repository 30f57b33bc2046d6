#!/usr/bin/env bash
# The CPU GEMM kernels A/B: OpenBLAS's sgemm (its AVX-512 SkylakeX kernel, forced where Debian 12's
# OpenBLAS does not know the CPU) against Eigen's GEMM (what mpx uses when OpenBLAS's kernel is
# narrower, here forced by naming the AVX2 Haswell kernel), same binary, runs interleaved A B A B so
# a loaded machine's drift falls on both. Prints bench's CSV rows with a kernel column.
# Usage: bench/gemm_ab.sh [mpx-cli] [pairs]   (docs/benchmarks.md)
set -euo pipefail
CLI=${1:-build/bin/mpx-cli}
PAIRS=${2:-3}
SHAPES=${SHAPES:-"784-1024-1024-10:256 784-512-10:256 2-64-64-2:64"}
THREADS=${THREADS:-"1 2"}
echo "kernel,model,batch,precision,device,steps_per_s,threads,gflop_per_s,peak_fraction"
for pair in $(seq "$PAIRS"); do
  for shape in $SHAPES; do
    for t in $THREADS; do
      for kernel in openblas eigen; do
        core=SkylakeX; [ "$kernel" = eigen ] && core=Haswell
        OPENBLAS_CORETYPE=$core "$CLI" bench --model "${shape%%:*}" --batch "${shape##*:}" --precision fp32 \
          --threads "$t" --seconds 1 --csv | tail -n +2 | sed "s/^/$kernel,/"
      done
    done
  done
done
