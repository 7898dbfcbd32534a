// anchor_loop: anchor_cuda.c's launch enqueue loop as a shared object, so that
// BenchmarkGPU*LaunchBesideC can run C's loop in its own process, on the
// same stream, function and context, alternating with its own launches.
// The caller makes the stream's context current and passes libcuda's
// cuLaunchKernel and cuStreamSynchronize.
//   gcc -O2 -shared -fPIC -o /tmp/anchor_loop.so anchor_loop.c
//   RIG_ANCHOR_LOOP=/tmp/anchor_loop.so cudadev.test -test.bench BesideC
#include <time.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz,
                         unsigned bx, unsigned by, unsigned bz, unsigned shared,
                         void *stream, void **params, void **extra);
typedef int (*sync_fn)(void *stream);

static long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

// anchor_enqueue launches f (one group of 32 threads, no parameters) n
// times on stream as anchor_cuda.c's "C launch enqueue" does, then waits for
// the stream; it answers the nanoseconds the launches took, the wait
// excluded.
long long anchor_enqueue(launch_fn launch, sync_fn sync, void *f, void *stream, long long n) {
  long long t0 = now();
  for (long long i = 0; i < n; i++) launch(f, 1, 1, 1, 32, 1, 1, 0, stream, 0, 0);
  long long t1 = now();
  sync(stream);
  return t1 - t0;
}
