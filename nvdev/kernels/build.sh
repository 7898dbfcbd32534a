#!/bin/bash
# Builds the RM driver's kernels with nvcc 13.0 (on a machine with CUDA).
set -e
cd "$(dirname "$0")"
for a in 80 86 89 90; do
  nvcc -cubin -O3 -arch=sm_$a -o copy.sm_$a.cubin copy.cu
done
cuobjdump -res-usage copy.sm_90.cubin > copy.sm_90.res-usage.txt
