#!/bin/bash
# Builds the test kernels with nvcc 13.0 (on a machine with CUDA), in this
# folder: kernels.cu as a cubin per architecture, as compute_90 PTX and as a
# fatbin of sm_80 and sm_90 cubins; kernels.cu less the two kernels that
# need CUDA's vprintf and __assertfail (-DNO_DEVICE_LIBRARY) as the sm_90
# cubin kernels_nv; and
# the listings cuobjdump writes of the kernels.cu cubins, which nvdev/hw's
# tests read from that package's testdata to check its cubin parser.
# cluster.cu, a kernel that requires clusters of groups, as an sm_90
# cubin of its own.
# portable.ptx, spin.ptx and local.ptx are written by hand and are not
# rebuilt here; ptxas assembles spin.ptx and local.ptx into the sm_90
# cubins that nvdev's tests read from that package's testdata.
set -e
cd "$(dirname "$0")"
listings=../../nvdev/hw/testdata
for a in 80 86 89 90; do
  nvcc -cubin -arch=sm_$a -o kernels.sm_$a.cubin kernels.cu
  cuobjdump -elf kernels.sm_$a.cubin > $listings/kernels.sm_$a.elf.txt
  cuobjdump -res-usage kernels.sm_$a.cubin > $listings/kernels.sm_$a.res-usage.txt
done
nvcc -ptx -arch=compute_90 -o kernels.compute_90.ptx kernels.cu
nvcc -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -o kernels.fatbin kernels.cu
nvcc -cubin -arch=sm_90 -DNO_DEVICE_LIBRARY -o kernels_nv.sm_90.cubin kernels.cu
cuobjdump -res-usage kernels_nv.sm_90.cubin > kernels_nv.sm_90.res-usage.txt
mkdir -p ../../nvdev/testdata
ptxas -arch=sm_90 -o ../../nvdev/testdata/spin.sm_90.cubin spin.ptx
ptxas -arch=sm_90 -o ../../nvdev/testdata/local.sm_90.cubin local.ptx
nvcc -cubin -arch=sm_90 -o cluster.sm_90.cubin cluster.cu
nvcc --version | tail -2 > NVCC_VERSION
