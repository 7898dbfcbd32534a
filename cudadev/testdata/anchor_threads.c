// anchor_threads: what C threads get from libcuda when many submit to one
// stream and each waits for its own launch, the yardstick for rigbench's
// closed loop on cudadev (-device cuda:0 -c N -depth 1). Each thread, in
// a loop for the level's duration, takes a lock, takes the next value,
// launches the empty kernel (one group of 32 threads) and lets the lock
// go; it then has the value written into a mapped host word with
// cuStreamWriteValue64, and waits until the word holds its value or more:
// spinning for 20 µs, then yielding the processor between looks
// (sched_yield), so that more threads than processors still run.
//
// Two ways to write the word, each with two locks:
//
//   each    the launch and the write of its value under one hold of the
//           lock, a write for every launch
//   shared  the write after the launch, under the lock again, of the last
//           value launched, and only where no write covered the value
//           yet: one write serves every thread whose launch came before
//           it (rig's commits on cudadev work so)
//   mutex   a pthread mutex
//   ticket  a ticket lock: threads take the lock in the order they came,
//           spinning for 20 µs and then yielding between looks
//
// On a machine with CUDA:
//
//   gcc -O2 -pthread -o /tmp/anchor_threads anchor_threads.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
//   /tmp/anchor_threads internal/testkernels/kernels.sm_90.cubin 1,16,64 2
//
// It prints a line a level and way: submissions a second, the latency
// from before the lock to the word's reaching the value at p50, p99 and
// max, and the process's CPU time (user + system) a submission and a
// second.
#include <cuda.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { MAX_THREADS = 1024, SAMPLES = 1 << 20 };

static void check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS) {
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "%s: %s\n", what, name);
    exit(1);
  }
}

static int64_t nanos(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

static int by_value(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static CUcontext ctx;
static CUstream stream;
static CUfunction empty;
static volatile uint64_t *word;
static CUdeviceptr word_dev;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_value, written;
static int64_t end_at;
static int shared_writes, ticket_lock;

// The ticket lock's counters, each on a cache line of its own.
static struct {
  _Alignas(64) uint64_t next;
  _Alignas(64) uint64_t serving;
} ticket;

static void lock(void) {
  if (!ticket_lock) {
    pthread_mutex_lock(&mu);
    return;
  }
  uint64_t mine = __atomic_fetch_add(&ticket.next, 1, __ATOMIC_RELAXED);
  int64_t spin_until = 0;
  for (int i = 0; __atomic_load_n(&ticket.serving, __ATOMIC_ACQUIRE) != mine; i++) {
    if (i == 0) spin_until = nanos() + 20000;
    if ((i & 63) == 63 && nanos() > spin_until) sched_yield();
  }
}

static void unlock(void) {
  if (!ticket_lock) {
    pthread_mutex_unlock(&mu);
    return;
  }
  __atomic_store_n(&ticket.serving, ticket.serving + 1, __ATOMIC_RELEASE);
}

// The latencies of every thread, each thread its own slice.
static int64_t *lat;
static int per_thread;

struct thread_result {
  int index;
  int n;
};

static void *submitter(void *arg) {
  struct thread_result *r = arg;
  int64_t *mine = lat + (int64_t)r->index * per_thread;
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  for (;;) {
    int64_t t0 = nanos();
    if (t0 >= end_at) break;
    lock();
    uint64_t v = ++next_value;
    check(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL),
          "cuLaunchKernel");
    if (!shared_writes) {
      check(cuStreamWriteValue64(stream, word_dev, v, 0), "cuStreamWriteValue64");
      unlock();
    } else {
      unlock();
      if (__atomic_load_n(&written, __ATOMIC_ACQUIRE) < v) {
        lock();
        if (written < v) {
          uint64_t last = next_value;
          check(cuStreamWriteValue64(stream, word_dev, last, 0),
                "cuStreamWriteValue64");
          __atomic_store_n(&written, last, __ATOMIC_RELEASE);
        }
        unlock();
      }
    }
    int64_t spin_until = nanos() + 20000;
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < v) {
      if (nanos() > spin_until) sched_yield();
    }
    if (r->n < per_thread) mine[r->n] = nanos() - t0;
    r->n++;
  }
  return NULL;
}

static void level(int threads, double seconds) {
  pthread_t tid[MAX_THREADS];
  struct thread_result res[MAX_THREADS];
  per_thread = SAMPLES / threads;
  double cpu0 = cpu_seconds();
  int64_t start = nanos();
  end_at = start + (int64_t)(seconds * 1e9);
  for (int i = 0; i < threads; i++) {
    res[i] = (struct thread_result){.index = i};
    pthread_create(&tid[i], NULL, submitter, &res[i]);
  }
  long total = 0;
  int kept = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(tid[i], NULL);
    total += res[i].n;
  }
  double wall = (nanos() - start) / 1e9, cpu = cpu_seconds() - cpu0;
  // Gather the kept latencies at the front of lat.
  for (int i = 0; i < threads; i++) {
    int n = res[i].n < per_thread ? res[i].n : per_thread;
    memmove(lat + kept, lat + (int64_t)i * per_thread, n * sizeof lat[0]);
    kept += n;
  }
  qsort(lat, kept, sizeof lat[0], by_value);
  printf("C threads %d, %s writes, %s: %.0f/s (%ld in %.2fs)  p50 %.2fus  p99 %.2fus  max "
         "%.2fus  CPU %.2fus per submission, %.2f s per s\n",
         threads, shared_writes ? "shared" : "each", ticket_lock ? "ticket" : "mutex",
         total / wall, total, wall, lat[kept / 2] / 1e3,
         lat[(int64_t)kept * 99 / 100] / 1e3, lat[kept - 1] / 1e3,
         cpu / total * 1e6, cpu / wall);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s CUBIN [THREADS,THREADS,... [SECONDS]] (CUBIN with a "
            "kernel named empty)\n",
            argv[0]);
    return 2;
  }
  const char *levels = argc > 2 ? argv[2] : "1,16,64";
  double seconds = argc > 3 ? atof(argv[3]) : 2;
  CUdevice dev;
  CUmodule mod;
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuModuleLoad(&mod, argv[1]), "cuModuleLoad");
  check(cuModuleGetFunction(&empty, mod, "empty"), "cuModuleGetFunction");
  check(cuMemHostAlloc((void **)&word, 64,
                       CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
        "cuMemHostAlloc");
  check(cuMemHostGetDevicePointer(&word_dev, (void *)word, 0),
        "cuMemHostGetDevicePointer");
  *word = 0;
  for (int i = 0; i < 1000; i++)
    check(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL),
          "warm-up launch");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  lat = malloc(sizeof lat[0] * SAMPLES);
  for (int way = 0; way < 4; way++) {
    shared_writes = way & 1;
    ticket_lock = way >> 1;
    char *list = strdup(levels);
    for (char *f = strtok(list, ","); f; f = strtok(NULL, ",")) {
      int n = atoi(f);
      if (n < 1 || n > MAX_THREADS) {
        fprintf(stderr, "threads %s: want 1 to %d\n", f, MAX_THREADS);
        return 2;
      }
      level(n, seconds);
    }
    free(list);
  }
  return 0;
}
