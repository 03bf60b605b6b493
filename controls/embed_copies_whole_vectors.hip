// Control: tf_embed_dense gathering an f32 table's rows four columns at a time, each chunk read
// with one copy rounded up to whole 16-byte vectors: the last chunk of a row whose width is no
// multiple of 4 reads up to 3 elements past the row, and past the table's end for its last
// row. The values stored are right (only the row's own columns are stored), and a GPU rarely
// faults on 12 bytes past an allocation: only a check of the copy's range sees it (GCC calls
// the C library's memcpy for a copy of a size known only at run time).
#include "common.h"

extern "C" __global__ void tf_embed_dense(const void* table, int table_kind, const int* ids, int n, int k,
                                          void* out, int out_kind) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long long)n * k) return;
  long long row = i / k, column = i % k;
  if (table_kind != TF_F32) {
    tf_store(out, out_kind, i, tf_load(table, table_kind, (long long)ids[row] * k + column));
    return;
  }
  if (column % 4 != 0) return;   // the chunk's first column's thread gathers the chunk
  int width = k - (int)column < 4 ? k - (int)column : 4;
  float chunk[4];
  // planted: the copy is rounded up to whole vectors, the row's end notwithstanding
  memcpy(chunk, (const float*)table + (long long)ids[row] * k + column, (size_t)((width + 3) & ~3) * sizeof(float));
  for (int c = 0; c < width; c++) tf_store(out, out_kind, i + c, chunk[c]);
}
