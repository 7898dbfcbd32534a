// The RM driver's own kernels: a copy or a fill of one row of at least
// 256 KiB within the device's Device memory, or of rows of 1 KiB or more
// with gaps between them, 256 KiB in all, runs as one of these on the
// compute channel, where it beats the copy engine.
// Built by build.sh with nvcc 13.0 into copy.sm_XX.cubin.
//
// Each thread moves 16-byte vectors of a row in a grid-stride loop; the
// bytes before the row's first 16-byte boundary of the destination and
// after its last are moved one at a time by the first threads, one byte
// each. The one-row kernels and the kernels of rows share the row's code.

typedef unsigned long long u64;

// copy_row copies n bytes from src to dst, thread tid of threads: 16-byte
// vectors where src and dst have the same address mod 16, bytes otherwise.
static __device__ __forceinline__ void copy_row(unsigned char *dst, const unsigned char *src, u64 n, u64 tid, u64 threads) {
  if (((u64)src & 15) != ((u64)dst & 15)) {
    // Misaligned against each other: bytes, grid-stride.
    for (u64 i = tid; i < n; i += threads) dst[i] = src[i];
    return;
  }
  u64 head = (16 - ((u64)dst & 15)) & 15;
  if (head > n) head = n;
  u64 body = (n - head) / 16;
  const uint4 *s = (const uint4 *)(src + head);
  uint4 *d = (uint4 *)(dst + head);
  for (u64 i = tid; i < body; i += threads) d[i] = s[i];
  if (tid < head) dst[tid] = src[tid];
  u64 tail = head + body * 16;
  if (tid < n - tail) dst[tail + tid] = src[tail + tid];
}

// fill_row fills n bytes at dst with word, thread tid of threads. word is
// the fill's four bytes, little-endian, as they lie from an address that
// is a multiple of 4 (a byte repeated four times for a fill of bytes):
// the byte at address a is byte a % 4 of word.
static __device__ __forceinline__ void fill_row(unsigned char *dst, unsigned int word, u64 n, u64 tid, u64 threads) {
  u64 head = (16 - ((u64)dst & 15)) & 15;
  if (head > n) head = n;
  uint4 v = make_uint4(word, word, word, word);
  u64 body = (n - head) / 16;
  uint4 *d = (uint4 *)(dst + head);
  for (u64 i = tid; i < body; i += threads) d[i] = v;
  if (tid < head) dst[tid] = (unsigned char)(word >> (8 * (((u64)dst + tid) & 3)));
  u64 tail = head + body * 16;
  if (tid < n - tail) dst[tail + tid] = (unsigned char)(word >> (8 * (((u64)dst + tail + tid) & 3)));
}

extern "C" __global__ void rig_copy(unsigned char *dst, const unsigned char *src, u64 n) {
  copy_row(dst, src, n, (u64)blockIdx.x * blockDim.x + threadIdx.x, (u64)gridDim.x * blockDim.x);
}

extern "C" __global__ void rig_fill(unsigned char *dst, unsigned int word, u64 n) {
  fill_row(dst, word, n, (u64)blockIdx.x * blockDim.x + threadIdx.x, (u64)gridDim.x * blockDim.x);
}

// rig_fill_rows fills rows rows of n bytes, pitch bytes apart, as rig_fill
// fills one: the grid's y dimension strides over the rows, its x threads
// over each row. A fill of words has rows that start at a multiple of 4.
extern "C" __global__ void rig_fill_rows(unsigned char *dst, unsigned int word, u64 n, u64 rows, u64 pitch) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 r = blockIdx.y; r < rows; r += gridDim.y) fill_row(dst + r * pitch, word, n, tid, threads);
}

// rig_copy_rows copies rows rows of n bytes, dpitch bytes apart in dst and
// spitch in src, as rig_copy copies one: the grid's y dimension strides
// over the rows, its x threads over each row. The rows of src and dst do
// not overlap.
extern "C" __global__ void rig_copy_rows(unsigned char *dst, const unsigned char *src, u64 n, u64 rows, u64 dpitch, u64 spitch) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 threads = (u64)gridDim.x * blockDim.x;
  for (u64 r = blockIdx.y; r < rows; r += gridDim.y) copy_row(dst + r * dpitch, src + r * spitch, n, tid, threads);
}
