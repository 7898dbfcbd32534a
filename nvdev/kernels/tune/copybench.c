// copybench: weighs the candidate copy and fill kernels of variants.cu
// against CUDA's cuMemcpyDtoDAsync and cuMemsetD8Async, on the CUDA driver
// API alone. run.sh builds and runs it; by hand, on a machine with CUDA:
//   nvcc -cubin -O3 -arch=sm_90 -o variants.sm_90.cubin variants.cu
//   gcc -O2 -pthread -o copybench copybench.c -I/usr/local/cuda/include
//     -L/usr/local/cuda/lib64/stubs -lcuda
//   ./copybench variants.sm_90.cubin [reps] [name-filter]
//
// First it checks every kernel once under every launch it will be timed
// with: copies of 1 GiB - 77 bytes from src+3 to dst+3, of 8 MiB + 11 bytes
// from src+1 to dst+5 (the mutually misaligned path), of 64 MiB at offset 0,
// of 1 MiB + 40 bytes at +48 and of 7 bytes at +9, each read back and
// compared on the host, with the bytes around the destination (a pattern or
// a sentinel) checked unchanged; fills the same. A wrong result prints a
// line starting FAIL.
//
// Then, for 64 MiB and 1 GiB, each kernel under each launch: groups of 256,
// 512 and 1024 threads, 1, 2, 4, 8, 16 and 64 groups a multiprocessor, and
// "cover", the groups that give each thread one step of its loop (capped
// at no more: a smaller grid that also covers n is named cover too).
// cuMemcpyDtoDAsync (cuMemsetD8Async for fills) is timed again before each
// kernel, the anchor its lines are weighed against. Each time is the
// median of reps runs (20 unless given; 3 untimed first), each between a
// pair of CUDA events; best is the fastest run. Lines:
//   copy 64MiB rig_copy_v2 block 256 groups 1056 8/SM res 8 med 31.9us 4207.3GB/s best 4250.1GB/s x0.987
// res is the groups a multiprocessor holds at once (the occupancy API); a
// copy's GB/s count bytes read and written (2n/s), a fill's bytes written;
// x is the kernel's rate over its anchor's, by medians. A summary ranks
// each kernel's best launch against the median of all anchors of a size,
// and a last section times each copy kernel's best 64 MiB launch with both
// ends at +48, at +3, and at src+1, dst+5, with cuMemcpyDtoDAsync beside it.
// A name-filter keeps the kernels whose names hold it, and both v0s. It
// exits 1 if any check failed.

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *where = "setup";
static char whereBuf[256];
#define CK(x)                                                        \
  do {                                                               \
    CUresult r_ = (x);                                               \
    if (r_) {                                                        \
      const char *s_ = "?";                                          \
      cuGetErrorName(r_, &s_);                                       \
      printf("%s: %s (during %s)\n", #x, s_, where);                 \
      fflush(stdout);                                                \
      exit(1);                                                       \
    }                                                                \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define BUF GIB     // each device buffer
#define GUARD 4096        // bytes checked unchanged after a destination
#define SENT 0xA5         // the copy checks' sentinel
#define FILLB 0xC3        // the byte the fill checks and benchmarks write
#define WARM 3
#define MAXREPS 101

// A kernel of variants.cu: unit is the 16-byte vectors one thread moves in
// one step of its loop, for the "cover" launch.
typedef struct {
  const char *name;
  int unit;
  const char *what;
} Kind;

static const Kind copyKinds[] = {
    {"rig_copy_v0", 1, "rig_copy of ../copy.cu as it is"},
    {"rig_copy_v1", 2, "grid, 2 vectors a thread in flight"},
    {"rig_copy_v2", 4, "grid, 4 vectors a thread in flight"},
    {"rig_copy_v3", 8, "grid, 8 vectors a thread in flight"},
    {"rig_copy_v4", 4, "grid, 4 in flight, __ldg (ld.global.nc)"},
    {"rig_copy_v5", 4, "grid, 4 in flight, __ldcs and __stcs"},
    {"rig_copy_v6", 4, "grid, 4 in flight, ld.global.nc.L1::no_allocate.L2::256B"},
    {"rig_copy_v7", 8, "grid, 8 in flight, no-allocate loads, __stcs"},
    {"rig_copy_v8", 4, "grid, 4 in flight, head to 128-byte alignment"},
    {"rig_copy_v9", 4, "pairs: 32 bytes side by side a thread, 2 pairs in flight"},
    {"rig_copy_v10", 4, "tiles of 4*B vectors a group, interleaved"},
    {"rig_copy_v11", 4, "tiles of 4*B vectors a group, a run of them each"},
    {"rig_copy_v12", 4, "v2 held to 32 registers (groups of at most 256)"},
    {"rig_copy_v13", 4, "no-allocate loads, __stcs, 4 in flight, held to 32 registers"},
    {"rig_copy_v14", 16, "grid, 16 in flight, no-allocate loads"},
    {"rig_copy_v15", 1, "grid, 1 vector, no-allocate loads (v0 with the hint)"},
    {"rig_copy_v16", 8, "tiles of 8*B vectors, __ldg, __stcs"},
};
static const Kind fillKinds[] = {
    {"rig_fill_v0", 1, "rig_fill of ../copy.cu as it is"},
    {"rig_fill_v1", 2, "grid, 2 vectors a thread a step"},
    {"rig_fill_v2", 4, "grid, 4 vectors a thread a step"},
    {"rig_fill_v3", 8, "grid, 8 vectors a thread a step"},
    {"rig_fill_v4", 4, "grid, 4 a step, __stcs"},
    {"rig_fill_v5", 4, "grid, 4 a step, st.global.L1::no_allocate"},
    {"rig_fill_v6", 4, "grid, 4 a step, head to 128-byte alignment"},
    {"rig_fill_v7", 4, "tiles of 4*B vectors a group"},
    {"rig_fill_v8", 8, "tiles of 8*B vectors a group, __stcs"},
};
#define NCOPY ((int)(sizeof copyKinds / sizeof copyKinds[0]))
#define NFILL ((int)(sizeof fillKinds / sizeof fillKinds[0]))
#define NKIND (NCOPY + NFILL)

// A loaded kernel and what the driver says of it.
typedef struct {
  const Kind *k;
  int fill;
  CUfunction f;  // NULL where the cubin lacks it or the filter leaves it out
  int regs, local, maxThreads;
  int failed;
} Kernel;

static Kernel kernels[NKIND];

static const int blocks[] = {256, 512, 1024};
static const int perSM[] = {1, 2, 4, 8, 16, 64};
#define NBLOCK 3
#define NPERSM 6
#define MAXGEO (NBLOCK * (NPERSM + 1) * 2)

typedef struct {
  int block;
  unsigned groups;
  char label[16];
} Geo;

static int sms;
static CUstream st;
static CUdeviceptr sbuf, dbuf;
static uint8_t *hs, *hd, *hf;  // the source's pattern, a read-back, FILLB bytes
static int reps = 20;
static CUevent ev[2 * MAXREPS];

// resident is the groups of block threads a multiprocessor holds of f.
static int resident(CUfunction f, int block) {
  int nb = 0;
  CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, block, 0));
  return nb;
}

// geos appends to g (of *ng) the launches of a kernel for n bytes.
static void geos(const Kernel *k, size_t n, Geo *g, int *ng) {
  for (int b = 0; b < NBLOCK; b++) {
    int block = blocks[b];
    if (block > k->maxThreads || resident(k->f, block) == 0) continue;
    unsigned long long per = (unsigned long long)block * k->k->unit;
    unsigned long long cover = (n / 16 + per - 1) / per;
    if (cover < 1) cover = 1;
    for (int i = 0; i <= NPERSM; i++) {
      unsigned long long groups = i < NPERSM ? (unsigned long long)sms * perSM[i] : cover;
      char label[16];
      if (groups >= cover) {
        groups = cover;
        snprintf(label, sizeof label, "cover");
      } else {
        snprintf(label, sizeof label, "%d/SM", perSM[i]);
      }
      int dup = 0;
      for (int j = 0; j < *ng; j++) dup |= g[j].block == block && g[j].groups == groups;
      if (dup || *ng >= MAXGEO) continue;
      g[*ng].block = block;
      g[*ng].groups = (unsigned)groups;
      snprintf(g[*ng].label, sizeof g[*ng].label, "%s", label);
      (*ng)++;
    }
  }
}

enum { OP_MEMCPY, OP_MEMSET, OP_COPY, OP_FILL };

typedef struct {
  int op;
  CUfunction f;
  int block;
  unsigned groups;
  CUdeviceptr dst, src;
  size_t n;
} Op;

static CUresult run(const Op *o) {
  CUdeviceptr d = o->dst, s = o->src;
  unsigned long long n = o->n;
  unsigned int b = FILLB;
  switch (o->op) {
  case OP_MEMCPY:
    return cuMemcpyDtoDAsync(d, s, o->n, st);
  case OP_MEMSET:
    return cuMemsetD8Async(d, FILLB, o->n, st);
  case OP_COPY: {
    void *args[] = {&d, &s, &n};
    return cuLaunchKernel(o->f, o->groups, 1, 1, o->block, 1, 1, 0, st, args, NULL);
  }
  case OP_FILL: {
    void *args[] = {&d, &b, &n};
    return cuLaunchKernel(o->f, o->groups, 1, 1, o->block, 1, 1, 0, st, args, NULL);
  }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

typedef struct {
  double med, best;  // microseconds
} Time;

static Time timeit(const Op *o) {
  double t[MAXREPS];
  for (int i = 0; i < WARM; i++) CK(run(o));
  for (int r = 0; r < reps; r++) {
    CK(cuEventRecord(ev[2 * r], st));
    CK(run(o));
    CK(cuEventRecord(ev[2 * r + 1], st));
  }
  CK(cuEventSynchronize(ev[2 * reps - 1]));
  for (int r = 0; r < reps; r++) {
    float ms;
    CK(cuEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
    t[r] = ms * 1e3;
  }
  qsort(t, reps, sizeof t[0], cmpd);
  Time x = {reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2, t[0]};
  return x;
}

// rate is GB/s for n bytes (twice for a copy: read and written) in us.
static double rate(int copy, size_t n, double us) { return (copy ? 2.0 : 1.0) * n / (us * 1e3); }

// Host compares, split over threads: 1 GiB read back at each check.
typedef struct {
  const uint8_t *a, *b;
  size_t n;
  int diff;
} Slice;

static void *cmpSlice(void *p) {
  Slice *s = p;
  s->diff = memcmp(s->a, s->b, s->n) != 0;
  return NULL;
}

#define NTHR 8
static int differ(const uint8_t *a, const uint8_t *b, size_t n) {
  if (n < 16 * MIB) return memcmp(a, b, n) != 0;
  pthread_t th[NTHR];
  Slice s[NTHR];
  size_t per = n / NTHR;
  for (int i = 0; i < NTHR; i++) {
    size_t off = i * per;
    s[i] = (Slice){a + off, b + off, i == NTHR - 1 ? n - off : per, 0};
    if (pthread_create(&th[i], NULL, cmpSlice, &s[i])) {
      cmpSlice(&s[i]);
      th[i] = 0;
    }
  }
  int d = 0;
  for (int i = 0; i < NTHR; i++) {
    if (th[i]) pthread_join(th[i], NULL);
    d |= s[i].diff;
  }
  return d;
}

// want is the byte a check expects at hd[i]: for a copy of n bytes from
// src+so to dst+dof, the source's there and the sentinel around it; for a
// fill, FILLB there and the source's pattern (copied in first) around it.
static uint8_t want(int fill, size_t so, size_t dof, size_t n, size_t i) {
  int in = i >= dof && i - dof < n;
  if (fill) return in ? FILLB : hs[i];
  return in ? hs[so + i - dof] : SENT;
}

// check runs kernel k under g on one case and compares all bytes of the
// destination's window [0, dof+n+GUARD) on the host; 0 if right.
static int check(Kernel *k, const Geo *g, size_t so, size_t dof, size_t n) {
  size_t end = dof + n + GUARD;
  if (end > BUF) end = BUF;
  snprintf(whereBuf, sizeof whereBuf, "check %s block %d groups %u n %zu src+%zu dst+%zu", k->k->name, g->block,
           g->groups, n, so, dof);
  where = whereBuf;
  if (k->fill) CK(cuMemcpyDtoDAsync(dbuf, sbuf, end, st));
  else CK(cuMemsetD8Async(dbuf, SENT, end, st));
  Op o = {k->fill ? OP_FILL : OP_COPY, k->f, g->block, g->groups, dbuf + dof, sbuf + so, n};
  CK(run(&o));
  CK(cuStreamSynchronize(st));
  CK(cuMemcpyDtoH(hd, dbuf, end));
  int bad = 0;
  for (size_t i = 0; i < dof; i++) bad |= hd[i] != want(k->fill, so, dof, n, i);
  for (size_t i = dof + n; i < end; i++) bad |= hd[i] != want(k->fill, so, dof, n, i);
  if (!bad) bad = differ(hd + dof, k->fill ? hf : hs + so, n);
  if (!bad) return 0;
  size_t first = 0, count = 0;
  for (size_t i = 0; i < end; i++) {
    if (hd[i] != want(k->fill, so, dof, n, i)) {
      if (count++ == 0) first = i;
    }
  }
  printf("FAIL %s %s block %d groups %u (%s): n %zu src+%zu dst+%zu: %zu bytes wrong, first at dst+%zu: 0x%02x, want "
         "0x%02x\n",
         k->fill ? "fill" : "copy", k->k->name, g->block, g->groups, g->label, n, so, dof, count, first, hd[first],
         want(k->fill, so, dof, n, first));
  fflush(stdout);
  k->failed = 1;
  return 1;
}

static const struct {
  size_t so, dof, n;
} cases[] = {
    {3, 3, BUF - 77},           // big, odd size, odd offsets alike
    {1, 5, 8 * MIB + 11},       // mutually misaligned: the byte path
    {0, 0, 64 * MIB},           // the benchmark's own case
    {48, 48, MIB + 40},         // 16-aligned, not 32- or 128-aligned
    {9, 9, 7},                  // fewer bytes than the head
};
#define NCASE ((int)(sizeof cases / sizeof cases[0]))

static const size_t sizes[] = {64 * MIB, BUF};
#define NSIZE 2

static const char *sizeName(size_t n) {
  static char b[4][32];
  static int i;
  i = (i + 1) % 4;
  if (n % GIB == 0) snprintf(b[i], sizeof b[i], "%lluGiB", (unsigned long long)(n / GIB));
  else if (n % MIB == 0) snprintf(b[i], sizeof b[i], "%lluMiB", (unsigned long long)(n / MIB));
  else snprintf(b[i], sizeof b[i], "%zuB", n);
  return b[i];
}

// Each kernel's best launch for a size (by median) and its time.
static Geo bestGeo[NSIZE][NKIND];
static Time bestTime[NSIZE][NKIND];
static double anchors[NSIZE][2][NKIND];  // [size][copy=0, fill=1][i]: medians, us
static int nanchor[NSIZE][2];

static void line(const char *what, size_t n, const char *name, const Geo *g, int res, Time t, double anchorMed) {
  int copy = what[0] == 'c';
  printf("%s %s %s", what, sizeName(n), name);
  if (g) printf(" block %d groups %u %s res %d", g->block, g->groups, g->label, res);
  printf(" med %.1fus %.1fGB/s best %.1fGB/s x%.3f\n", t.med, rate(copy, n, t.med), rate(copy, n, t.best),
         anchorMed / t.med);
  fflush(stdout);
}

// bench times each kernel of one kind (copy or fill) at size index si.
static void bench(int si, int fill) {
  size_t n = sizes[si];
  const char *what = fill ? "fill" : "copy";
  const char *anchorName = fill ? "cuMemsetD8Async" : "cuMemcpyDtoDAsync";
  for (int i = 0; i < NKIND; i++) {
    Kernel *k = &kernels[i];
    if (!k->f || k->fill != fill) continue;
    snprintf(whereBuf, sizeof whereBuf, "%s %s anchor before %s", what, sizeName(n), k->k->name);
    where = whereBuf;
    Op a = {fill ? OP_MEMSET : OP_MEMCPY, NULL, 0, 0, dbuf, sbuf, n};
    Time at = timeit(&a);
    anchors[si][fill][nanchor[si][fill]++] = at.med;
    line(what, n, anchorName, NULL, 0, at, at.med);
    Geo g[MAXGEO];
    int ng = 0;
    geos(k, n, g, &ng);
    bestTime[si][i].med = 0;
    for (int j = 0; j < ng; j++) {
      snprintf(whereBuf, sizeof whereBuf, "%s %s %s block %d groups %u", what, sizeName(n), k->k->name, g[j].block,
               g[j].groups);
      where = whereBuf;
      Op o = {fill ? OP_FILL : OP_COPY, k->f, g[j].block, g[j].groups, dbuf, sbuf, n};
      Time t = timeit(&o);
      line(what, n, k->k->name, &g[j], resident(k->f, g[j].block), t, at.med);
      if (bestTime[si][i].med == 0 || t.med < bestTime[si][i].med) {
        bestTime[si][i] = t;
        bestGeo[si][i] = g[j];
      }
    }
  }
}

static double median(double *v, int n) {
  double t[NKIND];
  memcpy(t, v, n * sizeof v[0]);
  qsort(t, n, sizeof t[0], cmpd);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void summary(int si, int fill) {
  size_t n = sizes[si];
  int na = nanchor[si][fill];
  if (na == 0) return;
  double am = median(anchors[si][fill], na), lo = anchors[si][fill][0], hi = lo;
  for (int i = 1; i < na; i++) {
    if (anchors[si][fill][i] < lo) lo = anchors[si][fill][i];
    if (anchors[si][fill][i] > hi) hi = anchors[si][fill][i];
  }
  printf("\nsummary %s %s: %s median of %d anchors %.1fus %.1fGB/s (anchors %.1f to %.1fGB/s)\n",
         fill ? "fill" : "copy", sizeName(n), fill ? "cuMemsetD8Async" : "cuMemcpyDtoDAsync", na, am,
         rate(!fill, n, am), rate(!fill, n, hi), rate(!fill, n, lo));
  int order[NKIND], no = 0;
  for (int i = 0; i < NKIND; i++)
    if (kernels[i].f && kernels[i].fill == fill && bestTime[si][i].med > 0) order[no++] = i;
  for (int a = 1; a < no; a++)  // by median time, fastest first
    for (int b = a; b > 0 && bestTime[si][order[b]].med < bestTime[si][order[b - 1]].med; b--) {
      int t = order[b];
      order[b] = order[b - 1];
      order[b - 1] = t;
    }
  for (int j = 0; j < no; j++) {
    int i = order[j];
    Geo *g = &bestGeo[si][i];
    printf("  %2d %-13s block %4d groups %7u %-6s med %.1fGB/s best %.1fGB/s x%.3f%s  (%s)\n", j + 1,
           kernels[i].k->name, g->block, g->groups, g->label, rate(!fill, n, bestTime[si][i].med),
           rate(!fill, n, bestTime[si][i].best), am / bestTime[si][i].med, kernels[i].failed ? "  FAIL" : "",
           kernels[i].k->what);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s variants.sm_90.cubin [reps] [name-filter]\n", argv[0]);
    return 2;
  }
  if (argc > 2) reps = atoi(argv[2]);
  if (reps < 1 || reps > MAXREPS) {
    fprintf(stderr, "reps: 1 to %d\n", MAXREPS);
    return 2;
  }
  const char *filter = argc > 3 ? argv[3] : NULL;
  double t0 = now();

  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 2 * MAXREPS; i++) CK(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
  char name[256];
  int drv, ccMaj, ccMin, l2, thrSM;
  CK(cuDeviceGetName(name, sizeof name, dev));
  CK(cuDriverGetVersion(&drv));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  CK(cuDeviceGetAttribute(&ccMaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&ccMin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  CK(cuDeviceGetAttribute(&thrSM, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev));
  printf("device %s sm_%d%d, %d SMs, %d threads an SM, L2 %d MiB, driver %d; reps %d (median), %d warm\n", name,
         ccMaj, ccMin, sms, thrSM, l2 >> 20, drv, reps, WARM);

  CK(cuModuleLoad(&mod, argv[1]));
  for (int i = 0; i < NKIND; i++) {
    Kernel *k = &kernels[i];
    k->fill = i >= NCOPY;
    k->k = k->fill ? &fillKinds[i - NCOPY] : &copyKinds[i];
    if (filter && !strstr(k->k->name, filter) && strcmp(k->k->name, "rig_copy_v0") &&
        strcmp(k->k->name, "rig_fill_v0"))
      continue;
    CUresult r = cuModuleGetFunction(&k->f, mod, k->k->name);
    if (r != CUDA_SUCCESS) {
      printf("MISSING %s in %s\n", k->k->name, argv[1]);
      k->f = NULL;
      continue;
    }
    CK(cuFuncGetAttribute(&k->regs, CU_FUNC_ATTRIBUTE_NUM_REGS, k->f));
    CK(cuFuncGetAttribute(&k->local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, k->f));
    CK(cuFuncGetAttribute(&k->maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, k->f));
    printf("kernel %-13s regs %3d local %3d max threads %4d, groups an SM at 256/512/1024: %d/%d/%d  (%s)\n",
           k->k->name, k->regs, k->local, k->maxThreads, resident(k->f, 256),
           k->maxThreads >= 512 ? resident(k->f, 512) : 0, k->maxThreads >= 1024 ? resident(k->f, 1024) : 0,
           k->k->what);
  }

  CK(cuMemAlloc(&sbuf, BUF));
  CK(cuMemAlloc(&dbuf, BUF));
  CK(cuMemHostAlloc((void **)&hs, BUF, 0));
  CK(cuMemHostAlloc((void **)&hd, BUF, 0));
  CK(cuMemHostAlloc((void **)&hf, BUF, 0));
  uint64_t x = 0x9E3779B97F4A7C15ull, *h64 = (uint64_t *)hs;
  for (size_t i = 0; i < BUF / 8; i++) {  // xorshift64: no short period
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    h64[i] = x;
  }
  memset(hf, FILLB, BUF);
  CK(cuMemcpyHtoD(sbuf, hs, BUF));  // from pinned memory: done when it returns
  double t1 = now();
  printf("setup %.1fs\n\n", t1 - t0);

  // Checks: every kernel under every launch it is timed with.
  int fails = 0, checks = 0;
  for (int i = 0; i < NKIND; i++) {
    Kernel *k = &kernels[i];
    if (!k->f) continue;
    Geo g[MAXGEO];
    int ng = 0;
    for (int si = 0; si < NSIZE; si++) geos(k, sizes[si], g, &ng);
    for (int j = 0; j < ng; j++) {
      for (int c = 0; c < NCASE; c++) {
        if (k->fill && cases[c].so != cases[c].dof) continue;  // a fill has no source
        fails += check(k, &g[j], cases[c].so, cases[c].dof, cases[c].n);
        checks++;
      }
    }
  }
  double t2 = now();
  printf("checks: %d, %d FAIL, %.1fs\n\n", checks, fails, t2 - t1);

  for (int si = 0; si < NSIZE; si++) bench(si, 0);
  for (int si = 0; si < NSIZE; si++) bench(si, 1);
  double t3 = now();
  for (int si = 0; si < NSIZE; si++) summary(si, 0);
  for (int si = 0; si < NSIZE; si++) summary(si, 1);

  // Offsets: each copy kernel's best 64 MiB launch, ends not at offset 0.
  static const struct {
    size_t so, dof;
  } offs[] = {{48, 48}, {3, 3}, {1, 5}};
  printf("\noffsets, 64MiB, each kernel at its best 64MiB launch:\n");
  for (int o = 0; o < 3; o++) {
    size_t n = 64 * MIB;
    snprintf(whereBuf, sizeof whereBuf, "offset anchor src+%zu dst+%zu", offs[o].so, offs[o].dof);
    where = whereBuf;
    Op a = {OP_MEMCPY, NULL, 0, 0, dbuf + offs[o].dof, sbuf + offs[o].so, n};
    Time at = timeit(&a);
    char label[64];
    snprintf(label, sizeof label, "cuMemcpyDtoDAsync src+%zu dst+%zu", offs[o].so, offs[o].dof);
    line("copy", n, label, NULL, 0, at, at.med);
    for (int i = 0; i < NCOPY; i++) {
      Kernel *k = &kernels[i];
      if (!k->f || bestTime[0][i].med == 0) continue;
      Geo *g = &bestGeo[0][i];
      snprintf(whereBuf, sizeof whereBuf, "offset %s src+%zu dst+%zu", k->k->name, offs[o].so, offs[o].dof);
      Op op = {OP_COPY, k->f, g->block, g->groups, dbuf + offs[o].dof, sbuf + offs[o].so, n};
      Time t = timeit(&op);
      snprintf(label, sizeof label, "%s src+%zu dst+%zu", k->k->name, offs[o].so, offs[o].dof);
      line("copy", n, label, g, resident(k->f, g->block), t, at.med);
    }
  }
  double t4 = now();
  printf("\ntimes: setup %.1fs, checks %.1fs, benchmarks %.1fs, offsets %.1fs; %d FAIL\n", t1 - t0, t2 - t1, t3 - t2,
         t4 - t3, fails);
  return fails ? 1 : 0;
}
