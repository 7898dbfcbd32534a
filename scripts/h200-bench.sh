#!/bin/bash
# The figures BENCHMARKS.md quotes from the GPU machine, in one run, from
# the repository root with .gpu-final carried (scripts/h200-build.sh):
# the C anchor beside the drivers' hot-path benchmarks (three rounds, each
# ratio taken within its round), rigbench under many goroutines and over
# several timelines (cudadev's beside C threads on one stream), the group
# commit against the old submit path, and the
# example service's load test (as it comes, and with the service and the
# load generator on processors of their own). Writes bench.txt, rigbench.txt and
# server.txt under $OUT.
R=$(pwd); F=$R/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O
K=$F/kernels.sm_90.cubin
export PATH=$PATH:/usr/local/cuda/bin
gcc -O2 -o /tmp/anchor $F/anchor_cuda.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
B=$O/bench.txt; : > $B
for r in 1 2 3; do
  echo "== round $r" >> $B
  timeout 60 /tmp/anchor $K >> $B 2>&1
  (cd cudadev && RIG_GPU=1 timeout 60 $F/cudadev.test -test.run '^$' -test.benchtime 20000x -test.benchmem \
    -test.bench 'GPU(Launch|RigLaunch|RoundTrip|RigRoundTrip)$') >> $B 2>&1
  (cd nvdev && RIG_GPU=1 timeout 60 $F/nvdev.test -test.run '^$' -test.benchtime 300ms -test.benchmem \
    -test.bench 'GPU(RigLaunch|RigRoundTrip|RoundTrip)$') >> $B 2>&1
done
gcc -O2 -shared -fPIC -o /tmp/anchor_loop.so $F/anchor_loop.c
echo "== beside C in one process" >> $B
(cd cudadev && RIG_GPU=1 RIG_ANCHOR_LOOP=/tmp/anchor_loop.so timeout 90 $F/cudadev.test -test.run '^$' -test.benchtime 12x -test.benchmem \
  -test.bench 'GPU(Launch|RigLaunch)BesideC$') >> $B 2>&1
echo "== group commit against the submit path that kicks under the lock" >> $B
(cd nvdev && RIG_GPU=1 timeout 90 $F/nvdev.test -test.run '^$' -test.benchtime 100000x -test.benchmem \
  -test.bench 'GPU(Submitters|Hold)$') >> $B 2>&1
G=$O/rigbench.txt; : > $G
gcc -O2 -pthread -o /tmp/anchor_threads $F/anchor_threads.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
# Two rounds; where .gpu-final holds rigbench-base (a build of an earlier
# commit), it runs beside this one in each round. C threads on libcuda
# (anchor_threads.c) run before cuda:0 in each round.
for r in 1 2; do for dev in nv:0 cuda:0; do
  if [ $dev = cuda:0 ]; then
    echo "== round $r: C threads on one stream (anchor_threads.c) 1,16,64" >> $G
    timeout 80 /tmp/anchor_threads $K 1,16,64 2 >> $G 2>&1
  fi
  for b in rigbench rigbench-base; do
    [ -x $F/$b ] || continue
    echo "== round $r: $b -device $dev -c 1,16,64 -depth 1" >> $G
    timeout 60 $F/$b -device $dev -c 1,16,64 -depth 1 -duration 2s >> $G 2>&1
  done
done; done
for b in rigbench rigbench-base; do
  [ -x $F/$b ] || continue
  echo "== $b -device nv:0 -timelines 4 -c 16 -depth 1" >> $G
  timeout 40 $F/$b -device nv:0 -timelines 4 -c 16 -depth 1 -duration 3s >> $G 2>&1
  for t in 1 4; do
    echo "== $b -device cuda:0 -timelines $t -c $((16 / t)) -depth 1" >> $G
    timeout 40 $F/$b -device cuda:0 -timelines $t -c $((16 / t)) -depth 1 -duration 3s >> $G 2>&1
  done
  for dev in nv:0 cuda:0; do
    echo "== $b -device $dev -c 1000 -depth 1" >> $G
    timeout 40 $F/$b -device $dev -c 1000 -depth 1 -duration 2s >> $G 2>&1
  done
done
S=$O/server.txt; : > $S
echo "== examples/server load -device nv:0 (vegeta), 5 faults of each kind" >> $S
timeout 120 $F/server-load -device nv:0 -c 1,16,64,256 -duration 2s -faults 5 -fault-kinds address,trap -cpuprofile $O/nv >> $S 2>&1
# The service and vegeta on processors of their own, half each (GPU
# interrupts come on CPU 14 on the H200's machine), two rounds.
for r in 1 2; do
  echo "== round $r: examples/server load -device nv:0 (vegeta) -server-cpus 0-7 -client-cpus 8-15" >> $S
  timeout 60 $F/server-load -device nv:0 -c 16,64,256 -duration 2s -server-cpus 0-7 -client-cpus 8-15 >> $S 2>&1
done
echo "== examples/server load -device nv:0 -client raw" >> $S
timeout 90 $F/server-load -device nv:0 -c 64,256 -duration 2s -client raw -faults 5 -standby=false >> $S 2>&1
echo "== examples/server load -device cuda:0 (vegeta)" >> $S
timeout 90 $F/server-load -device cuda:0 -c 1,16,64,256 -duration 2s >> $S 2>&1
cp $F/server-load $O/server-load.bin
ls -la $O
