#!/bin/bash
# Builds kernels_nv.sm_90.cubin from kernels_nv.cu with nvcc 13.0 (on a machine with CUDA).
set -e
cd "$(dirname "$0")"
nvcc -cubin -arch=sm_90 -o kernels_nv.sm_90.cubin kernels_nv.cu
cuobjdump -res-usage kernels_nv.sm_90.cubin > kernels_nv.sm_90.res-usage.txt
