#!/bin/bash
# Round twenty-six's run (BENCHMARKS): the GPU tests, then rigbench of this
# build beside an earlier build's, .gpu-final/rigbench-prev (build it from
# that commit: go build -o .gpu-final/rigbench-prev ./cmd/rigbench), with C
# threads on one stream (anchor_threads.c) as the anchor. Run it on the GPU
# machine from the repository root with .gpu-final carried; it writes
# tests.txt, summary.txt, rigbench.txt and machine.txt under $OUT.
R=$(pwd); F=$R/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O
export PATH=$PATH:/usr/local/cuda/bin
K=$F/kernels.sm_90.cubin
nproc > $O/machine.txt; head -1 /proc/stat >> $O/machine.txt; uptime >> $O/machine.txt
bash $F/h200-tests.sh > /dev/null 2>&1
gcc -O2 -pthread -o /tmp/anchor_threads $F/anchor_threads.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
G=$O/rigbench.txt; : > $G
for r in 1 2 3; do for b in rigbench rigbench-prev; do
  echo "== round $r: $b 4x16" >> $G
  head -1 /proc/stat >> $G
  timeout 30 $F/$b -device nv:0 -timelines 4 -c 16 -depth 1 -duration 3s >> $G 2>&1
  head -1 /proc/stat >> $G
done; done
for r in 1 2; do
  echo "== round $r: C threads on one stream 1,16,64" >> $G
  timeout 80 /tmp/anchor_threads $K 1,16,64 2 >> $G 2>&1
  for dev in nv:0 cuda:0; do for b in rigbench rigbench-prev; do
    echo "== round $r: $b $dev -c 1,16,64" >> $G
    timeout 60 $F/$b -device $dev -c 1,16,64 -depth 1 -duration 2s >> $G 2>&1
  done; done
done
uptime >> $O/machine.txt; head -1 /proc/stat >> $O/machine.txt
for r in 1 2; do for b in rigbench rigbench-prev; do
  echo "== round $r: $b cuda:0 4x4" >> $G
  timeout 30 $F/$b -device cuda:0 -timelines 4 -c 4 -depth 1 -duration 2s >> $G 2>&1
  echo "== round $r: $b cuda:0 1x16" >> $G
  timeout 30 $F/$b -device cuda:0 -c 16 -depth 1 -duration 2s >> $G 2>&1
done; done
uptime >> $O/machine.txt
