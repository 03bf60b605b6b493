// Control: tf_kv_append that "never poisons the cache": a new row holding a NaN is not written,
// and the slot keeps its old row. A NaN planted only in row 0, which the contract's slots make
// padding, never shows it.
// New K and V rows written into a paged KV cache at given slots. The cache is
// [pages, page_size, d] in f16 or bf16; slot s is row s % page_size of page s / page_size.
// A slot outside the cache (negative: a padding row) is not written; when two new rows name the same
// slot, the later one wins, so every input has one result.
//
// The op copies the cache it is given (cache_in) to the cache it returns, and writes the new
// rows at their slots: every element of the output is written exactly once (a copied row is
// one that no new row names), so there is no race between the copy and the scatter.
// Grid: x = pages * page_size + n blocks of 64 threads (first the cache rows, then one
// block per new row), y = 2 (0 the keys, 1 the values).
#include "common.h"

#define TF_APPEND_THREADS 64

extern "C" __global__ void tf_kv_append(const void* k_new, int k_new_kind, const void* v_new, int v_new_kind,
                                        const int* slots, int n, const void* k_cache_in, const void* v_cache_in,
                                        int pages, int page_size, int d, void* k_cache, int k_cache_kind,
                                        void* v_cache, int v_cache_kind) {
  int t = (int)threadIdx.x;
  bool values = blockIdx.y == 1;
  const void* fresh = values ? v_new : k_new;
  int fresh_kind = values ? v_new_kind : k_new_kind;
  const unsigned short* cache_in = (const unsigned short*)(values ? v_cache_in : k_cache_in);
  void* cache = values ? v_cache : k_cache;
  int cache_kind = values ? v_cache_kind : k_cache_kind;
  long long cache_rows = (long long)pages * page_size;
  long long b = blockIdx.x;

  if (b < cache_rows) {
    // a cache row: copied as it is (raw 16-bit values) unless a new row lands on it; a warp's
    bool named = false;   // lanes look through the slots together, each every warpSize-th, and vote
    for (int i = t % warpSize; i < n; i += warpSize) named |= (long long)slots[i] == b;
    if (__any(named)) return;
    for (int j = t; j < d; j += TF_APPEND_THREADS) ((unsigned short*)cache)[b * d + j] = cache_in[b * d + j];
    return;
  }
  // a new row: converted to the cache type (round to nearest even) at its slot
  int i = (int)(b - cache_rows);
  int slot = slots[i];
  if (slot < 0 || (long long)slot >= cache_rows) return;
  for (int later = i + 1; later < n; later++) {
    if (slots[later] == slot) return;
  }
  bool poisoned = false;   // planted: a NaN anywhere in the new row
  for (int j = 0; j < d; j++) {
    float v = tf_load(fresh, fresh_kind, (long long)i * d + j);
    if (v != v) poisoned = true;
  }
  long long page = slot / page_size, offset = slot % page_size;
  long long destination = (page * page_size + offset) * d;
  if (poisoned) {   // planted: the old row stays
    for (int j = t; j < d; j += TF_APPEND_THREADS) ((unsigned short*)cache)[destination + j] = cache_in[destination + j];
    return;
  }
  for (int j = t; j < d; j += TF_APPEND_THREADS) {
    tf_store(cache, cache_kind, destination + j, tf_load(fresh, fresh_kind, (long long)i * d + j));
  }
}
