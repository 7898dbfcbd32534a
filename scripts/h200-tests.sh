#!/bin/bash
# Every GPU test of cudadev, nvdev, nvdev/nvidia, profile and the example
# service, on the GPU
# machine, from the repository root with .gpu-final carried (built by
# scripts/h200-build.sh). Writes tests.txt (the verbose logs, each
# package's exit status after it) and summary.txt under $OUT; with
# BUILD_KERNELS=1 it also builds the example service's kernels with nvcc
# into $OUT.
R=$(pwd); F=$R/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
if [ "${BUILD_KERNELS:-}" = 1 ]; then
  (cd examples/server/service/kernels && sh build.sh && cp saxpy.sm_90.cubin saxpy.ptx $O/) > $O/kernels.txt 2>&1
fi
T=$O/tests.txt; : > $T
run() { # package, binary, timeout
  echo "=== package $1" >> $T
  (cd $1 && RIG_GPU=1 timeout $3 $F/$2 -test.run "${RUN:-GPU|Example}" -test.v -test.timeout $(($3 - 5))s) >> $T 2>&1
  echo "=== package $1 rc=$?" >> $T
}
run cudadev cudadev.test 170
run nvdev nvdev.test 230
run nvdev/nvidia nvidia.test 60
run profile profile.test 60
run examples/server/service server-service.test 90
{ grep -c '^--- PASS' $T | sed 's/^/passed /'; grep -c '^--- SKIP' $T | sed 's/^/skipped /'
  grep '^--- FAIL\|rc=' $T; } > $O/summary.txt
cat $O/summary.txt
