// The kernels of kernels.cu that an RM driver loads: every
// kernel but uses_printf and uses_assert, whose images refer to the driver-supplied
// vprintf and __assertfail (nvdev refuses such images: no CUDA supplies them).
// Built by build.sh.

extern "C" __global__ void empty() {}

// The example: doubles x in place, n a multiple of 256.
extern "C" __global__ void twice(float *x) {
  x[blockIdx.x * blockDim.x + threadIdx.x] *= 2;
}

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// Parameters of mixed sizes and alignments: offsets 0, 2, 8, 16, 24.
extern "C" __global__ void mixed(char c, short s, double d, int *out, long long k) {
  out[0] = c; out[1] = s; out[2] = (int)d; out[3] = (int)k;
}

struct P4000 { int v[1000]; };
struct P32000 { int v[8000]; };
// 4,000 parameter bytes: under the 4,096 limit of every architecture.
extern "C" __global__ void params4000(P4000 p, int *out) { out[threadIdx.x] = p.v[threadIdx.x]; }
// 32,000 parameter bytes + a pointer: needs compute capability 7.0+ and CUDA 12.1+ (32,764 limit).
extern "C" __global__ void params32000(P32000 p, int *out) { out[threadIdx.x] = p.v[threadIdx.x * 7]; }

// Static shared memory: 4 KiB.
extern "C" __global__ void shared_static(float *x) {
  __shared__ float s[1024];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[1023 - threadIdx.x];
}

// Dynamic shared memory: as much as the launch gives.
extern "C" __global__ void shared_dynamic(float *x, int n) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = s[n - 1 - i];
}

// Local memory: a dynamically indexed array spills to the stack.
extern "C" __global__ void local_mem(const int *idx, int *out) {
  int a[256];
  for (int i = 0; i < 256; i++) a[i] = i * threadIdx.x;
  out[threadIdx.x] = a[idx[threadIdx.x] & 255];
}

// Global data and a constant bank: the image's own symbols, relocated.
__device__ unsigned long long counter;
__constant__ float table[256];
extern "C" __global__ void count(unsigned long long *out) {
  unsigned long long v = atomicAdd(&counter, 1ull);
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = v;
}
extern "C" __global__ void lookup(const int *i, float *out) { out[threadIdx.x] = table[i[threadIdx.x] & 255]; }

// Faults and hangs, for loss tests.
extern "C" __global__ void fault_illegal_address(int *p) { *(volatile int *)((char *)p + 0x7ffffff0000ull) = 1; }
extern "C" __global__ void fault_misaligned(int *p) { *(volatile int *)((char *)p + 1) = 1; }
extern "C" __global__ void trap() { asm volatile("trap;"); }
// Spins until *flag is non-zero: a hang unless the host or another device writes the flag.
extern "C" __global__ void spin_until(volatile unsigned long long *flag) { while (*flag == 0) {} }


// Writes a 64-bit value into a word: to test GPU-side waits on timeline-like words.
extern "C" __global__ void store64(unsigned long long *w, unsigned long long v) { *(volatile unsigned long long *)w = v; }
