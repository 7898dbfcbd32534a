#!/bin/bash
# Builds what the side-by-side run on the GPU machine needs into .gpu-final/
# (git-ignored): the test binaries of cudadev, nvdev, nvdev/nvidia, runtime
# and profile, rigbench, the C anchors and the cubins. Run it here, then on
# the GPU machine, from the repository root with .gpu-final carried:
#
#     bash .gpu-final/final.sh      # anchors, benchmarks, rigbench, GPU tests
#
# final.sh writes anchors.txt, bench.txt, rigbench.txt, tests.txt, trace.json
# and latency.svg under $OUT. BENCHMARKS.md quotes its figures.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
F=.gpu-final; rm -rf $F; mkdir -p $F
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOFLAGS="-ldflags=-s -w"
for p in cudadev nvdev runtime profile; do go test -c -o $F/$p.test ./$p; done
go test -c -o $F/nvidia.test ./nvdev/nvidia
go build -o $F/rigbench ./cmd/rigbench
(cd examples/server && go build -o ../../$F/server-load ./load && go test -c -o ../../$F/server-service.test ./service)
cp cudadev/testdata/anchor_cuda.c cudadev/testdata/anchor_sched.c cudadev/testdata/anchor_loop.c cudadev/testdata/anchor_threads.c $F/
cp internal/testkernels/kernels.sm_90.cubin $F/
cp scripts/final.sh scripts/verify.sh scripts/h200-tests.sh scripts/h200-bench.sh scripts/h200-busy.sh scripts/h200-round.sh scripts/h200-goals.sh scripts/h200-do.sh $F/
du -sh $F
