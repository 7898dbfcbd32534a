#!/bin/sh
# Builds the example service's kernels with nvcc (CUDA 12 or later), from
# this folder: a cubin for Hopper and PTX for compute capability 8.0 and
# later. The outputs are checked in, so the service builds without CUDA.
set -e
cd "$(dirname "$0")"
nvcc -O3 -cubin -arch=sm_90 -o saxpy.sm_90.cubin saxpy.cu
nvcc -O3 -ptx -arch=compute_80 -o saxpy.ptx saxpy.cu
