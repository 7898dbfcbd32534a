#!/bin/bash
# Run.Do against Submit and Wait at -depth 1 (BENCHMARKS, round
# thirty-one): rigbench of this build by Do (rigbench), by two calls
# (rigbench -split) and an earlier build (.gpu-final/rigbench-prev, which
# submits and waits in two calls), in rounds whose order turns each round:
# four nvdev timelines of 16 goroutines, one of 16 and of 64, then one
# goroutine on nv:0 and cuda:0, and cuda:0's four timelines of 4 against
# one of 16. It writes do.txt and do-summary.txt under $OUT.
F=$(pwd)/.gpu-final; O=${OUT:-/tmp/out}; mkdir -p $O; G=$O/do.txt; : > $G
nproc >> $G; head -1 /proc/stat >> $G
R=${ROUNDS:-3}
for r in $(seq 1 $R); do
  case $((r % 3)) in
    1) set -- "rigbench" "rigbench -split" "rigbench-prev" ;;
    2) set -- "rigbench-prev" "rigbench" "rigbench -split" ;;
    0) set -- "rigbench -split" "rigbench-prev" "rigbench" ;;
  esac
  for shape in "-timelines 4 -c 16" "-c 16" "-c 64"; do
    for b in "$@"; do
      echo "== round $r: $b nv:0 $shape" >> $G
      timeout 30 $F/$b -device nv:0 $shape -depth 1 -duration 3s >> $G 2>&1
    done
  done
  for b in "$@"; do for dev in nv:0 cuda:0; do
    echo "== round $r: $b $dev -c 1" >> $G
    timeout 30 $F/$b -device $dev -c 1 -depth 1 -duration 2s >> $G 2>&1
  done; done
  echo "== round $r: rigbench cuda:0 -timelines 4 -c 4" >> $G
  timeout 30 $F/rigbench -device cuda:0 -timelines 4 -c 4 -depth 1 -duration 2s >> $G 2>&1
  echo "== round $r: rigbench cuda:0 -c 16" >> $G
  timeout 30 $F/rigbench -device cuda:0 -c 16 -depth 1 -duration 2s >> $G 2>&1
done
head -1 /proc/stat >> $G
grep -E "^== |^rig:|^  latency|CPU time|goroutines waiting|^  waits" $G > $O/do-summary.txt
