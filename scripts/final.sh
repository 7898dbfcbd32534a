#!/bin/bash
# The side-by-side run on the H200, from the repository root with
# .gpu-final carried (built by scripts/h200-build.sh). The C anchors and
# the drivers' benchmarks alternate, five rounds of each, so that a ratio
# compares figures taken seconds apart; scripts/ratios.py reads the logs.
# Then the copies, the core's benchmarks, rigbench and the GPU tests.
R=$(pwd); F=$R/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O
K=$F/kernels.sm_90.cubin
export PATH=$PATH:/usr/local/cuda/bin
gcc -O2 -o /tmp/anchor $F/anchor_cuda.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
gcc -O2 -o /tmp/as $F/anchor_sched.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/anchors.txt
: > $O/bench.txt
for r in 1 2 3 4 5; do
  echo "== round $r" >> $O/anchors.txt
  timeout 60 /tmp/anchor $K >> $O/anchors.txt 2>&1; timeout 60 /tmp/as $K blocking >> $O/anchors.txt 2>&1
  echo "== round $r" >> $O/bench.txt
  # The one-launch submissions run 100,000 times, as anchor_cuda.c's enqueue.
  (cd cudadev && RIG_GPU=1 timeout 60 $F/cudadev.test -test.run '^$' -test.benchtime 100000x -test.benchmem \
    -test.bench 'GPU(Launch|RigLaunch)$') >> $O/bench.txt 2>&1
  (cd cudadev && RIG_GPU=1 timeout 120 $F/cudadev.test -test.run '^$' -test.benchtime 20000x -test.benchmem \
    -test.bench 'GPU(Call|PushPop|LaunchBatch|RigLaunchBatch|RoundTrip|RigRoundTrip|Pipelined)$') >> $O/bench.txt 2>&1
  (cd nvdev && RIG_GPU=1 timeout 120 $F/nvdev.test -test.run '^$' -test.benchtime 300ms -test.timeout 110s -test.benchmem \
    -test.bench 'GPU(RigLaunch|RigLaunchPinnedRings|RigRoundTrip|RoundTrip|Chained|Chained1000)$') >> $O/bench.txt 2>&1
done
# The one-launch submissions beside anchor_cuda.c's loop in their own process
# (testdata/anchor_loop.c): 24 rounds, each a turn of 100,000 launches.
gcc -O2 -shared -fPIC -o /tmp/anchor_loop.so $F/anchor_loop.c
echo "== beside C" >> $O/bench.txt
(cd cudadev && RIG_GPU=1 RIG_ANCHOR_LOOP=/tmp/anchor_loop.so timeout 150 $F/cudadev.test -test.run '^$' -test.benchtime 24x -test.benchmem \
  -test.bench 'GPU(Launch|RigLaunch|RigNullCall)BesideC$') >> $O/bench.txt 2>&1
echo "== copies" >> $O/bench.txt
(cd cudadev && RIG_GPU=1 timeout 60 $F/cudadev.test -test.run '^$' -test.benchtime 50x -test.bench 'GPU(CopyD2D|CopyH2D|Graph)$' -test.benchmem) >> $O/bench.txt 2>&1
(cd nvdev && RIG_GPU=1 timeout 100 $F/nvdev.test -test.run '^$' -test.bench 'GPUCopy|GPUHeld' -test.benchtime 300ms -test.timeout 90s -test.benchmem) >> $O/bench.txt 2>&1
echo "== core benchmarks (hostdev, 16 cores)" >> $O/bench.txt
(cd runtime && timeout 60 $F/runtime.test -test.run '^$' -test.bench . -test.benchtime 100000x -test.count 3 -test.benchmem) >> $O/bench.txt 2>&1
B=$F/rigbench; G=$O/rigbench.txt; : > $G
for dev in cuda:0 nv:0; do for w in empty twice d2d h2d d2h fill; do
  echo "== rigbench -device $dev -workload $w" >> $G; timeout 30 $B -device $dev -workload $w -duration 2s -compare -rounds 2 >> $G 2>&1
done; done
for c in 1 4 16; do echo "== rigbench -device nv:0 -c $c -depth 64" >> $G; timeout 30 $B -device nv:0 -c $c -depth 64 -duration 2s >> $G 2>&1; done
for c in 1 4 16; do echo "== rigbench -device cuda:0 -c $c -depth 64" >> $G; timeout 30 $B -device cuda:0 -c $c -depth 64 -duration 2s >> $G 2>&1; done
for c in 1 2 4 16; do echo "== rigbench -device host -c $c" >> $G; timeout 30 $B -device host -c $c -duration 1s -compare -rounds 2 >> $G 2>&1; done
echo "== rigbench -device cuda:0 -workload mixed -trace" >> $G
timeout 30 $B -device cuda:0 -workload mixed -duration 1s -trace $O/trace.json -plot $O/latency.svg >> $G 2>&1
echo "== GPU tests" > $O/tests.txt
(cd cudadev && RIG_GPU=1 timeout 150 $F/cudadev.test -test.run 'GPU|Example' -test.v -test.timeout 140s) >> $O/tests.txt 2>&1; echo "cudadev rc=$?" >> $O/tests.txt
(cd nvdev && RIG_GPU=1 timeout 200 $F/nvdev.test -test.run 'GPU' -test.v -test.timeout 190s) >> $O/tests.txt 2>&1; echo "nvdev rc=$?" >> $O/tests.txt
(cd nvdev/nvidia && RIG_GPU=1 timeout 60 $F/nvidia.test -test.run 'GPU' -test.v -test.timeout 55s) >> $O/tests.txt 2>&1; echo "nvidia rc=$?" >> $O/tests.txt
(cd profile && RIG_GPU=1 timeout 60 $F/profile.test -test.v -test.timeout 55s) >> $O/tests.txt 2>&1; echo "profile rc=$?" >> $O/tests.txt
ls -la $O
