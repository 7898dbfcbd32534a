// anchor_cuda: what a C program gets from libcuda directly, the yardstick
// that rig's GPU benchmarks are measured against (BENCHMARKS.md). It needs
// a cubin with a kernel `empty` that takes no parameters, such as
// internal/testkernels/kernels.sm_90.cubin. On a machine with CUDA:
//
//   gcc -O2 -o /tmp/anchor_cuda anchor_cuda.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
//   /tmp/anchor_cuda internal/testkernels/kernels.sm_90.cubin
//
// It prints one line a figure, each named as the benchmarks' comments name
// their anchor:
//
//   C trivial call                      cuCtxGetCurrent
//   C launch enqueue                    cuLaunchKernel of empty, one group of
//                                       32 threads, 100,000 in a row
//   C launch+sync median                a launch and cuStreamSynchronize
//   C launch+writeValue64+spin median   a launch, cuStreamWriteValue64 of a
//                                       mapped host word, a spin on it
//   C launch+write64 pipelined          the same, 100,000 values in flight
//   C graph of 1000 chained empty kernels
//   C d2d copy 1GiB, C h2d pinned 1GiB  copy rates
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { LAUNCHES = 100000, SAMPLES = 5000, GRAPH_NODES = 1000 };

static void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s\n", what, name);
    exit(1);
  }
}

static double nanos(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof v[0], by_value);
  return v[n / 2];
}

static CUresult launch(CUfunction f, CUstream s) {
  return cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CUBIN (with a kernel named empty)\n", argv[0]);
    return 2;
  }
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUmodule mod;
  CUfunction empty;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

  const int calls = 1000000;
  double t0 = nanos();
  for (int i = 0; i < calls; i++) {
    CUcontext c;
    cuCtxGetCurrent(&c);
  }
  printf("C trivial call (cuCtxGetCurrent): %.1f ns\n", (nanos() - t0) / calls);

  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuModuleLoad(&mod, argv[1]), "cuModuleLoad");
  check(cuModuleGetFunction(&empty, mod, "empty"), "cuModuleGetFunction");
  for (int i = 0; i < 1000; i++) check(launch(empty, s), "warm-up launch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");

  // Enqueue rate: the host's cost of a launch, the GPU's run excluded.
  t0 = nanos();
  for (int i = 0; i < LAUNCHES; i++) launch(empty, s);
  double t1 = nanos();
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  double t2 = nanos();
  printf("C launch enqueue: %.0f ns/launch; drain incl: %.0f ns/launch\n",
         (t1 - t0) / LAUNCHES, (t2 - t0) / LAUNCHES);

  double *lat = malloc(sizeof(double) * SAMPLES);
  for (int i = 0; i < SAMPLES; i++) {
    double a = nanos();
    launch(empty, s);
    cuStreamSynchronize(s);
    lat[i] = nanos() - a;
  }
  printf("C launch+sync median: %.0f ns\n", median(lat, SAMPLES));

  // A round trip through a timeline word: the GPU writes the value into
  // mapped host memory after the launch, and the host spins on it.
  volatile uint64_t *word;
  CUdeviceptr word_dev;
  check(cuMemHostAlloc((void **)&word, 64,
                       CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
        "cuMemHostAlloc");
  check(cuMemHostGetDevicePointer(&word_dev, (void *)word, 0),
        "cuMemHostGetDevicePointer");
  *word = 0;
  uint64_t v = 0;
  for (int i = 0; i < SAMPLES; i++) {
    double a = nanos();
    v++;
    launch(empty, s);
    check(cuStreamWriteValue64(s, word_dev, v, 0), "cuStreamWriteValue64");
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < v) {
    }
    lat[i] = nanos() - a;
  }
  printf("C launch+writeValue64+spin median: %.0f ns\n", median(lat, SAMPLES));

  t0 = nanos();
  for (int i = 0; i < LAUNCHES; i++) {
    v++;
    launch(empty, s);
    cuStreamWriteValue64(s, word_dev, v, 0);
  }
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < v) {
  }
  printf("C launch+write64 pipelined: %.0f ns/value\n",
         (nanos() - t0) / LAUNCHES);

  // A graph of empty kernels, each depending on the one before.
  CUgraph graph;
  CUgraphExec exec;
  CUgraphNode last = NULL;
  CUDA_KERNEL_NODE_PARAMS node = {0};
  node.func = empty;
  node.gridDimX = node.gridDimY = node.gridDimZ = 1;
  node.blockDimX = 32;
  node.blockDimY = node.blockDimZ = 1;
  check(cuGraphCreate(&graph, 0), "cuGraphCreate");
  for (int i = 0; i < GRAPH_NODES; i++) {
    CUgraphNode n;
    check(cuGraphAddKernelNode(&n, graph, last ? &last : NULL, last ? 1 : 0, &node),
          "cuGraphAddKernelNode");
    last = n;
  }
  check(cuGraphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  check(cuGraphLaunch(exec, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  const int graphs = 20;
  t0 = nanos();
  for (int r = 0; r < graphs; r++) check(cuGraphLaunch(exec, s), "cuGraphLaunch");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("C graph of %d chained empty kernels: %.0f ns/kernel\n", GRAPH_NODES,
         (nanos() - t0) / ((double)graphs * GRAPH_NODES));

  // Copy rates of 1 GiB: device to device, and pinned host to device.
  const size_t size = (size_t)1 << 30;
  CUdeviceptr src, dst;
  check(cuMemAlloc(&src, size), "cuMemAlloc");
  check(cuMemAlloc(&dst, size), "cuMemAlloc");
  check(cuMemsetD8Async(src, 1, size, s), "cuMemsetD8Async");
  check(cuMemcpyAsync(dst, src, size, s), "cuMemcpyAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  const int copies = 10;
  t0 = nanos();
  for (int r = 0; r < copies; r++) check(cuMemcpyAsync(dst, src, size, s), "cuMemcpyAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  double took = nanos() - t0;
  printf("C d2d copy 1GiB: %.1f GB/s (read+write %.1f)\n",
         copies * (double)size / took, 2 * copies * (double)size / took);

  void *host;
  check(cuMemHostAlloc(&host, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
  check(cuMemcpyHtoDAsync(src, host, size, s), "cuMemcpyHtoDAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  const int uploads = 5;
  t0 = nanos();
  for (int r = 0; r < uploads; r++) check(cuMemcpyHtoDAsync(src, host, size, s), "cuMemcpyHtoDAsync");
  check(cuStreamSynchronize(s), "cuStreamSynchronize");
  printf("C h2d pinned 1GiB: %.1f GB/s\n", uploads * (double)size / (nanos() - t0));
  return 0;
}
