#!/bin/bash
# The GPU tests of every driver, and rigbench's comparisons of rig against
# each driver alone, on the GPU machine from the repository root with
# .gpu-final carried (built by scripts/h200-build.sh).
R=$(pwd); F=$R/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O
T=$O/tests.txt; : > $T
for p in cudadev nvdev nvdev/nvidia profile; do
  b=$F/$(basename $p).test; [ $p = nvdev/nvidia ] && b=$F/nvidia.test
  (cd $p && RIG_GPU=1 timeout 170 $b -test.run "GPU|Example" -test.v -test.timeout 165s) >> $T 2>&1
  echo "$p rc=$?" >> $T
done
G=$O/rigbench.txt; : > $G
for d in cuda:0 nv:0; do for w in empty twice d2d fill; do
  echo "== rigbench -device $d -workload $w -compare" >> $G
  timeout 40 $F/rigbench -device $d -workload $w -duration 2s -compare -rounds 2 >> $G 2>&1; echo "rc=$?" >> $G
done
  echo "== rigbench -device $d -workload empty -depth 1 -compare" >> $G
  timeout 40 $F/rigbench -device $d -workload empty -duration 2s -depth 1 -compare -rounds 2 >> $G 2>&1; echo "rc=$?" >> $G
done
ls -la $O
