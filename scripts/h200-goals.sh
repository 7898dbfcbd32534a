#!/bin/bash
# The goals of several timelines in one run (BENCHMARKS, round twenty-six):
# four nvdev timelines of 16, cuda:0's four timelines of 4 against one of
# 16, one goroutine beside an earlier build (.gpu-final/rigbench-prev, as
# for h200-round.sh), then the pair of 1 ms kernels (the GPU tests named
# GPUTimelines). Then six rounds of four timelines and of one goroutine,
# the two builds' order swapped each round. It writes goals.txt and
# order.txt under $OUT.
F=$(pwd)/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O; G=$O/goals.txt; : > $G
nproc >> $G; head -1 /proc/stat >> $G
for r in 1 2 3; do
  echo "== round $r: rigbench 4x16" >> $G
  timeout 30 $F/rigbench -device nv:0 -timelines 4 -c 16 -depth 1 -duration 3s >> $G 2>&1
  echo "== round $r: rigbench cuda:0 4x4" >> $G
  timeout 30 $F/rigbench -device cuda:0 -timelines 4 -c 4 -depth 1 -duration 2s >> $G 2>&1
  echo "== round $r: rigbench cuda:0 1x16" >> $G
  timeout 30 $F/rigbench -device cuda:0 -c 16 -depth 1 -duration 2s >> $G 2>&1
  for b in rigbench rigbench-prev; do for dev in nv:0 cuda:0; do
    echo "== round $r: $b $dev -c 1" >> $G
    timeout 30 $F/$b -device $dev -c 1 -depth 1 -duration 2s >> $G 2>&1
  done; done
done
head -1 /proc/stat >> $G
echo "== timelines GPU tests" >> $G
(cd cudadev && RIG_GPU=1 timeout 120 ../.gpu-final/cudadev.test -test.run 'GPUTimelines' -test.v >> $G 2>&1; echo "cudadev rc=$?" >> $G)
(cd nvdev && RIG_GPU=1 timeout 120 ../.gpu-final/nvdev.test -test.run 'GPUTimelines' -test.v >> $G 2>&1; echo "nvdev rc=$?" >> $G)

G=$O/order.txt; : > $G
for r in 1 2 3 4 5 6; do
  if [ $((r % 2)) = 1 ]; then set -- rigbench-prev rigbench; else set -- rigbench rigbench-prev; fi
  for b in "$@"; do
    echo "== round $r: $b 4x16" >> $G
    timeout 30 $F/$b -device nv:0 -timelines 4 -c 16 -depth 1 -duration 3s >> $G 2>&1
  done
  for b in "$@"; do
    echo "== round $r: $b nv:0 -c 1" >> $G
    timeout 30 $F/$b -device nv:0 -c 1 -depth 1 -duration 2s >> $G 2>&1
  done
done
grep -E "^== |^rig:|^  latency|^-c |goroutines waiting|CPU time" $G > $O/order-summary.txt
