// Kernels of the example service. build.sh compiles them into
// saxpy.sm_90.cubin (for nvdev and cudadev on Hopper) and saxpy.ptx
// (compute_80: cudadev compiles it for any GPU of compute capability 8.0
// or later).
#include <cstdint>

// saxpy sets y[i] = a*x[i] + y[i] for i < n.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// spin busy-waits for ns nanoseconds of the GPU's global timer: the
// service's slow request, behind its -debug flag.
extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}

// crash writes far outside any allocation: the service's faulting request,
// behind its -debug flag.
extern "C" __global__ void crash(int *p) { *(volatile int *)((char *)p + 0x7ffffff0000ull) = 1; }

// trap ends with a trap instruction: the service's other faulting request
// (POST /debug/fault?kind=trap), an exception of the compute engine rather
// than of the memory unit.
extern "C" __global__ void trap() { asm volatile("trap;"); }
