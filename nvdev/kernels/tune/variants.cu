// Candidate copy and fill kernels, weighed by copybench.c against CUDA's
// cuMemcpyDtoDAsync and cuMemsetD8Async (run.sh builds and runs both).
// Each has the signature of rig_copy in ../copy.cu, or of rig_fill as it
// was when they were weighed (a byte, where it now takes the fill's four
// bytes, and sets its head and tail bytes from them), so the one that
// wins can take that kernel's place as it is, or with that change:
//
//   rig_copy_vN(unsigned char *dst, const unsigned char *src, u64 n)
//   rig_fill_vN(unsigned char *dst, unsigned int byte, u64 n)
//
// All of them move the bytes before the first aligned boundary of the
// destination and after the last one singly, 16-byte vectors between, and
// a copy whose source and destination differ in their address mod 16 one
// byte at a time, as rig_copy does. Source and destination do not overlap.
//
// The vector loops: "grid" gives a thread the vectors tid, tid+T, tid+2T...
// (T the threads of the grid); with U > 1 a thread loads U of them, T apart,
// before it stores any, so U loads are in flight at once. "tiles" gives a
// group U*B vectors side by side (B its threads) at each step, and "chunks"
// one run of such tiles for each group. "pairs" gives a thread 32 bytes side
// by side, two vectors.

typedef unsigned long long u64;

// Loads.
#define LD_PLAIN 0 // ld.global
#define LD_NC 1    // __ldg: ld.global.nc, the read-only path
#define LD_CS 2    // __ldcs: ld.global.cs, evict first
#define LD_NA 3    // ld.global.nc.L1::no_allocate.L2::256B

// Stores.
#define ST_PLAIN 0 // st.global
#define ST_CS 1    // __stcs: st.global.cs, evict first
#define ST_NA 2    // st.global.L1::no_allocate

template <int L> __device__ __forceinline__ uint4 ld16(const uint4 *p) {
  if (L == LD_NC) return __ldg(p);
  if (L == LD_CS) return __ldcs(p);
  if (L == LD_NA) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
  }
  return *p;
}

template <int S> __device__ __forceinline__ void st16(uint4 *p, uint4 v) {
  if (S == ST_CS) {
    __stcs(p, v);
  } else if (S == ST_NA) {
    asm volatile("st.global.L1::no_allocate.v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
  } else {
    *p = v;
  }
}

__device__ __forceinline__ u64 thread_id() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 thread_count() { return (u64)gridDim.x * blockDim.x; }

// Bytes [from, to), one at a time, grid-stride.
__device__ __forceinline__ void copy_bytes(unsigned char *dst, const unsigned char *src, u64 from, u64 to,
                                           u64 tid, u64 threads) {
  for (u64 i = from + tid; i < to; i += threads) dst[i] = src[i];
}

__device__ __forceinline__ void fill_bytes(unsigned char *dst, unsigned char b, u64 from, u64 to, u64 tid,
                                           u64 threads) {
  for (u64 i = from + tid; i < to; i += threads) dst[i] = b;
}

// Vectors [0, body): thread tid moves tid + m*threads for m = 0, 1, 2...,
// U of them (all loads, then all stores) while U remain, then one at a time.
template <int U, int L, int S>
__device__ __forceinline__ void copy_grid(uint4 *d, const uint4 *s, u64 body, u64 tid, u64 threads) {
  u64 i = tid;
  for (; i + (U - 1) * threads < body; i += U * threads) {
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; j++) v[j] = ld16<L>(s + i + j * threads);
#pragma unroll
    for (int j = 0; j < U; j++) st16<S>(d + i + j * threads, v[j]);
  }
  for (; i < body; i += threads) st16<S>(d + i, ld16<L>(s + i));
}

template <int U, int S>
__device__ __forceinline__ void fill_grid(uint4 *d, uint4 v, u64 body, u64 tid, u64 threads) {
  u64 i = tid;
  for (; i + (U - 1) * threads < body; i += U * threads) {
#pragma unroll
    for (int j = 0; j < U; j++) st16<S>(d + i + j * threads, v);
  }
  for (; i < body; i += threads) st16<S>(d + i, v);
}

// Vectors [0, body) in tiles of U*B (B the group's threads): group g moves
// tiles g, g+G, g+2G... (G the groups), or with chunked the tiles
// [g*c, (g+1)*c) for c = ceil(tiles/G); thread t of a group moves t, t+B...
// of a tile. The vectors after the last whole tile go grid-stride.
template <int U, int L, int S, bool chunked>
__device__ __forceinline__ void copy_tiles(uint4 *d, const uint4 *s, u64 body, u64 tid, u64 threads) {
  u64 b = blockDim.x, tile = b * U, tiles = body / tile;
  u64 first = blockIdx.x, end = tiles, step = gridDim.x;
  if (chunked) {
    u64 per = (tiles + gridDim.x - 1) / gridDim.x;
    first = blockIdx.x * per;
    end = first + per;
    if (end > tiles) end = tiles;
    step = 1;
  }
  for (u64 k = first; k < end; k += step) {
    u64 base = k * tile + threadIdx.x;
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; j++) v[j] = ld16<L>(s + base + j * b);
#pragma unroll
    for (int j = 0; j < U; j++) st16<S>(d + base + j * b, v[j]);
  }
  for (u64 i = tiles * tile + tid; i < body; i += threads) st16<S>(d + i, ld16<L>(s + i));
}

template <int U, int S>
__device__ __forceinline__ void fill_tiles(uint4 *d, uint4 v, u64 body, u64 tid, u64 threads) {
  u64 b = blockDim.x, tile = b * U, tiles = body / tile;
  for (u64 k = blockIdx.x; k < tiles; k += gridDim.x) {
    u64 base = k * tile + threadIdx.x;
#pragma unroll
    for (int j = 0; j < U; j++) st16<S>(d + base + j * b, v);
  }
  for (u64 i = tiles * tile + tid; i < body; i += threads) st16<S>(d + i, v);
}

// Pairs of vectors [0, pairs): as copy_grid, but a thread's unit is the two
// vectors 2p and 2p+1, 32 bytes side by side.
template <int U, int L, int S>
__device__ __forceinline__ void copy_pairs(uint4 *d, const uint4 *s, u64 pairs, u64 tid, u64 threads) {
  u64 i = tid;
  for (; i + (U - 1) * threads < pairs; i += U * threads) {
    uint4 v[2 * U];
#pragma unroll
    for (int j = 0; j < U; j++) {
      v[2 * j] = ld16<L>(s + 2 * (i + j * threads));
      v[2 * j + 1] = ld16<L>(s + 2 * (i + j * threads) + 1);
    }
#pragma unroll
    for (int j = 0; j < U; j++) {
      st16<S>(d + 2 * (i + j * threads), v[2 * j]);
      st16<S>(d + 2 * (i + j * threads) + 1, v[2 * j + 1]);
    }
  }
  for (; i < pairs; i += threads) {
    uint4 a = ld16<L>(s + 2 * i), b = ld16<L>(s + 2 * i + 1);
    st16<S>(d + 2 * i, a);
    st16<S>(d + 2 * i + 1, b);
  }
}

// The vector loops each copy variant runs between its head and tail.
#define BODY_GRID 0
#define BODY_TILES 1
#define BODY_CHUNKS 2
#define BODY_PAIRS 3

// A copy whose head runs up to A-byte alignment of dst (A a power of two,
// 16 or more), then vectors by the loop K, then the tail. Source and
// destination differing mod 16: bytes.
template <int K, int U, int L, int S, int A>
__device__ __forceinline__ void copy_any(unsigned char *dst, const unsigned char *src, u64 n) {
  u64 tid = thread_id(), threads = thread_count();
  if ((((u64)src ^ (u64)dst) & 15) != 0) {
    copy_bytes(dst, src, 0, n, tid, threads);
    return;
  }
  u64 head = (A - ((u64)dst & (A - 1))) & (A - 1);
  if (head > n) head = n;
  u64 unit = K == BODY_PAIRS ? 32 : 16;
  u64 units = (n - head) / unit;
  u64 tail = head + units * unit;
  uint4 *d = (uint4 *)(dst + head);
  const uint4 *s = (const uint4 *)(src + head);
  if (K == BODY_GRID) copy_grid<U, L, S>(d, s, units, tid, threads);
  if (K == BODY_TILES) copy_tiles<U, L, S, false>(d, s, units, tid, threads);
  if (K == BODY_CHUNKS) copy_tiles<U, L, S, true>(d, s, units, tid, threads);
  if (K == BODY_PAIRS) copy_pairs<U, L, S>(d, s, units, tid, threads);
  copy_bytes(dst, src, 0, head, tid, threads);
  copy_bytes(dst, src, tail, n, tid, threads);
}

template <int K, int U, int S, int A>
__device__ __forceinline__ void fill_any(unsigned char *dst, unsigned int byte, u64 n) {
  u64 tid = thread_id(), threads = thread_count();
  unsigned char b = (unsigned char)byte;
  unsigned int w = (byte & 255) * 0x01010101u;
  uint4 v = make_uint4(w, w, w, w);
  u64 head = (A - ((u64)dst & (A - 1))) & (A - 1);
  if (head > n) head = n;
  u64 body = (n - head) / 16;
  u64 tail = head + body * 16;
  uint4 *d = (uint4 *)(dst + head);
  if (K == BODY_TILES) fill_tiles<U, S>(d, v, body, tid, threads);
  else fill_grid<U, S>(d, v, body, tid, threads);
  fill_bytes(dst, b, 0, head, tid, threads);
  fill_bytes(dst, b, tail, n, tid, threads);
}

// v0: rig_copy of ../copy.cu as it is, the baseline.
extern "C" __global__ void rig_copy_v0(unsigned char *dst, const unsigned char *src, u64 n) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 threads = (u64)gridDim.x * blockDim.x;
  u64 head = (16 - ((u64)dst & 15)) & 15;
  if (head > n) head = n;
  if (((u64)src & 15) != ((u64)dst & 15)) {
    for (u64 i = tid; i < n; i += threads) dst[i] = src[i];
    return;
  }
  u64 body = (n - head) / 16;
  const uint4 *s = (const uint4 *)(src + head);
  uint4 *d = (uint4 *)(dst + head);
  for (u64 i = tid; i < body; i += threads) d[i] = s[i];
  if (tid < head) dst[tid] = src[tid];
  u64 tail = head + body * 16;
  if (tid < n - tail) dst[tail + tid] = src[tail + tid];
}

#define COPY(name, K, U, L, S, A)                                                        \
  extern "C" __global__ void name(unsigned char *dst, const unsigned char *src, u64 n) { \
    copy_any<K, U, L, S, A>(dst, src, n);                                                \
  }
#define COPY_BOUNDED(name, threads, groups, K, U, L, S, A)                      \
  extern "C" __global__ void __launch_bounds__(threads, groups)                 \
      name(unsigned char *dst, const unsigned char *src, u64 n) {               \
    copy_any<K, U, L, S, A>(dst, src, n);                                       \
  }

// Loads in flight: 2, 4, 8 vectors a thread, plain loads and stores.
COPY(rig_copy_v1, BODY_GRID, 2, LD_PLAIN, ST_PLAIN, 16)
COPY(rig_copy_v2, BODY_GRID, 4, LD_PLAIN, ST_PLAIN, 16)
COPY(rig_copy_v3, BODY_GRID, 8, LD_PLAIN, ST_PLAIN, 16)
// Cache paths and hints, 4 vectors a thread.
COPY(rig_copy_v4, BODY_GRID, 4, LD_NC, ST_PLAIN, 16)
COPY(rig_copy_v5, BODY_GRID, 4, LD_CS, ST_CS, 16)
COPY(rig_copy_v6, BODY_GRID, 4, LD_NA, ST_PLAIN, 16)
COPY(rig_copy_v7, BODY_GRID, 8, LD_NA, ST_CS, 16)
// The head runs to 128-byte alignment, so that each warp's 512 bytes are
// whole 128-byte lines (the same as v2 where dst is so aligned).
COPY(rig_copy_v8, BODY_GRID, 4, LD_PLAIN, ST_PLAIN, 128)
// 32 bytes side by side a thread, from 32-byte alignment; 2 pairs in flight.
COPY(rig_copy_v9, BODY_PAIRS, 2, LD_PLAIN, ST_PLAIN, 32)
// Tiles of a group: 4 vectors a thread, a group's 4*B side by side.
COPY(rig_copy_v10, BODY_TILES, 4, LD_PLAIN, ST_PLAIN, 16)
// A run of tiles for each group.
COPY(rig_copy_v11, BODY_CHUNKS, 4, LD_PLAIN, ST_PLAIN, 16)
// v2 held to 32 registers so that 8 groups of 256 fit a multiprocessor
// (groups of at most 256 threads).
COPY_BOUNDED(rig_copy_v12, 256, 8, BODY_GRID, 4, LD_PLAIN, ST_PLAIN, 16)
// The no-allocate loads and streaming stores held to 32 registers for 2
// groups of 1024.
COPY_BOUNDED(rig_copy_v13, 1024, 2, BODY_GRID, 4, LD_NA, ST_CS, 16)
// 16 vectors (256 bytes) a thread in flight, no-allocate loads.
COPY(rig_copy_v14, BODY_GRID, 16, LD_NA, ST_PLAIN, 16)
// The no-allocate loads alone, 1 vector a thread: v0 with the hint.
COPY(rig_copy_v15, BODY_GRID, 1, LD_NA, ST_PLAIN, 16)
// The read-only path in tiles, streaming stores.
COPY(rig_copy_v16, BODY_TILES, 8, LD_NC, ST_CS, 16)

// v0: rig_fill of ../copy.cu as it was, the baseline.
extern "C" __global__ void rig_fill_v0(unsigned char *dst, unsigned int byte, u64 n) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 threads = (u64)gridDim.x * blockDim.x;
  u64 head = (16 - ((u64)dst & 15)) & 15;
  if (head > n) head = n;
  unsigned int w = (byte & 255) * 0x01010101u;
  uint4 v = make_uint4(w, w, w, w);
  u64 body = (n - head) / 16;
  uint4 *d = (uint4 *)(dst + head);
  for (u64 i = tid; i < body; i += threads) d[i] = v;
  if (tid < head) dst[tid] = (unsigned char)byte;
  u64 tail = head + body * 16;
  if (tid < n - tail) dst[tail + tid] = (unsigned char)byte;
}

#define FILL(name, K, U, S, A)                                                   \
  extern "C" __global__ void name(unsigned char *dst, unsigned int byte, u64 n) { \
    fill_any<K, U, S, A>(dst, byte, n);                                           \
  }

FILL(rig_fill_v1, BODY_GRID, 2, ST_PLAIN, 16)
FILL(rig_fill_v2, BODY_GRID, 4, ST_PLAIN, 16)
FILL(rig_fill_v3, BODY_GRID, 8, ST_PLAIN, 16)
FILL(rig_fill_v4, BODY_GRID, 4, ST_CS, 16)
FILL(rig_fill_v5, BODY_GRID, 4, ST_NA, 16)
FILL(rig_fill_v6, BODY_GRID, 4, ST_PLAIN, 128)
FILL(rig_fill_v7, BODY_TILES, 4, ST_PLAIN, 16)
FILL(rig_fill_v8, BODY_TILES, 8, ST_CS, 16)
