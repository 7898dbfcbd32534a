#!/bin/bash
# Builds the candidate kernels (variants.cu) and copybench.c, and runs
# copybench on GPU 0: it checks every kernel and times it against
# cuMemcpyDtoDAsync and cuMemsetD8Async. Run from the repository root on a
# machine with CUDA 13.0 (nvcc), gcc and an NVIDIA GPU:
#   bash nvdev/kernels/tune/run.sh [reps] [name-filter]
# The report goes to ${OUT:-.}/copybench.txt, beside the cubin, the
# compiler's register and spill lines, cuobjdump -res-usage and the SASS.
# ARCH (sm_90 unless set) picks the architecture, CUDA_HOME the toolkit.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-.}
mkdir -p "$out"
out=$(cd "$out" && pwd)
arch=${ARCH:-sm_90}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$(command -v nvcc || echo "$cuda/bin/nvcc")
cuobjdump=$(command -v cuobjdump || echo "$cuda/bin/cuobjdump")
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT

cubin=$build/variants.$arch.cubin
"$nvcc" --version | tail -n 2
"$nvcc" -cubin -O3 -arch="$arch" -Xptxas -v -o "$cubin" "$here/variants.cu" 2>&1 | tee "$out/ptxas.$arch.txt"
cp "$cubin" "$out/"
"$cuobjdump" -res-usage "$cubin" > "$out/variants.$arch.res-usage.txt" || echo "cuobjdump -res-usage failed"
"$cuobjdump" -sass "$cubin" > "$out/variants.$arch.sass.txt" || echo "cuobjdump -sass failed"

# libcuda: the toolkit's lib64, the driver's own in the system's library
# folder, or the toolkit's stub (the driver's libcuda.so.1 loads at run).
gcc -O2 -std=gnu11 -Wall -pthread -o "$build/copybench" "$here/copybench.c" -I"$cuda/include" \
  -L"$cuda/lib64" -L/usr/lib/x86_64-linux-gnu -L"$cuda/lib64/stubs" -L"$cuda/targets/x86_64-linux/lib/stubs" -lcuda

"$build/copybench" "$cubin" "$@" 2>&1 | tee "$out/copybench.txt"
