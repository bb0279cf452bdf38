// lattice_tokens.cu -- the lattice models' encoding on the device without host reads between
// stages (BytePiece and SentencePiece Unigram; gpu_text/cuda_ops/lattice_tokens.py runs them
// around trie.cu's prefix search and lattice.cu's route and emit).
//
// lattice_spans: the spans the lattice solves, from the normalized rows (one span per row) or
//   from the pre-tokenizer's per-byte marks (one span per marked byte, packed in order by a
//   decoupled look-back scan, lookback.cuh; the unused spans after them stay empty at the end of
//   the data), each span's scratch offset, and the longest span (atomicMax; a pre-token's length
//   found by reading on to the next mark, at most long_bytes), which the host reads together with
//   the number of edges, so that a batch of short spans skips the long-span kernels.
// lattice_id_counts: per token of the paths, what it becomes (a piece id, its bytes' BYTE pieces,
//   or nothing when it extends the run of unknown tokens before it) and, by look-back, where its
//   ids start; the total is the one count the host reads before allocating the ids.
// lattice_ids: every token's ids and byte spans, and each row's first id.
// Per-thread work: a byte or a token (at most one character's bytes for a token that falls back
// to bytes), one trie walk of at most one character, one binary search.
#include "double_array.cuh"
#include "lookback.cuh"

// What a token becomes (lattice_id_counts' kinds; a kind >= 0 is the token's one id).
#define GT_LT_BYTES (-1)   // one BYTE piece per byte
#define GT_LT_MERGED (-2)  // no id: the unknown id before it spans it too
// finish: how the tokens that are no edge (value -1, a fallback character) become ids.
#define GT_LT_LOOKUP 0  // BytePiece: the piece the character spells, else its bytes
#define GT_LT_MERGE 1   // Unigram: a run of them is one unknown id
#define GT_LT_BYTE_FALLBACK 2  // Unigram with byte fallback: their bytes
// A user symbol's mark (pre_tokenizer.cu's PT_SYMBOL_MARK): its span is one id, the piece it spells.
#define GT_LT_SYMBOL_MARK 7

// Per thread: a row (by_rows) or a byte of the marks. bounds (n_spans + 1 entries; with marks
// filled with n_bytes before the launch): span k is [bounds[k], bounds[k + 1]); scratch_offsets:
// span k's lattice rows (bounds[k] + k, after a one-slot row at n_bytes that every empty span
// past the packed ones shares when the spans come from marks); longest: the longest span's
// length, or long_bytes when a span is as long; *symbols (zeroed) non-zero when a user symbol's mark
// is among the marks. status: 1 + gridDim.x zeros.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_spans(const u8* __restrict__ marks, const i64* __restrict__ offsets, i64 n_rows, i64 n_bytes, i64 by_rows,
              i64 long_bytes, u64* __restrict__ status, i64* __restrict__ bounds, i64* __restrict__ scratch_offsets,
              u64* __restrict__ longest, u64* __restrict__ symbols) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 tile_slot, prior;
    const i64 g = global_thread_index();
    if (by_rows) {
        if (g < n_rows) atomicMax(longest, (u64)(offsets[g + 1] - offsets[g]));
        if (g <= n_rows) {
            bounds[g] = offsets[g];
            scratch_offsets[g] = offsets[g] + g;
        }
        return;
    }
    const i64 tile = lookback_tile(status, &tile_slot);
    const i64 i = tile * GT_BLOCK + threadIdx.x;
    const i64 flag = i < n_bytes && marks[i] != 0;
    i64 total;
    const i64 k = lookback_prefix(flag, status, tile, scratch, &prior, &total);
    if (flag) {
        bounds[k] = i;
        scratch_offsets[k] = n_bytes + 1 + i + k;
        // the pre-token ends at the next mark (every non-empty row's first byte is one) or the data's end
        i64 end = i + 1;
        for (; end < n_bytes && end - i < long_bytes && marks[end] == 0; ++end) GT_STEP();
        atomicMax(longest, (u64)(end - i));
        if (marks[i] == GT_LT_SYMBOL_MARK) atomicMax(symbols, 1ull);
    }
}

// The value of the word data[begin, end) in the trie, or -1.
__device__ __forceinline__ int spelled(const u8* data, i64 begin, i64 end, const int* state, const int* check,
                                       const u8* label, const u8* eow, int trie_size) {
    int pos = 0;
    for (i64 b = begin; b < end && pos >= 0; ++b) {
        GT_STEP();
        pos = trie_step(state, check, label, trie_size, pos, data[b]);
    }
    return pos >= 0 ? trie_value(state, check, label, eow, trie_size, pos) : -1;
}

// Per thread: token t of the paths (token_offsets[n_spans] of them; the arrays have room for
// `capacity`): its kind (above) in kinds[t] and the offset of its first id in id_offsets[t],
// id_offsets[capacity] the total. With a user symbol's mark among the marks (*symbols, from
// lattice_spans), a token of a span marked GT_LT_SYMBOL_MARK (found by a binary search of the
// spans' bounds) is that span's one id, the piece the span spells (its first token), or nothing
// (GT_LT_MERGED: the others); every token is GT_LT_BYTES when the span spells no piece.
// status: 1 + gridDim.x zeros.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_id_counts(const u8* __restrict__ data, const i64* __restrict__ token_offsets, i64 n_spans,
                  const i64* __restrict__ starts, const i64* __restrict__ ends, const int* __restrict__ values,
                  i64 capacity, i64 finish, int unk_id, const int* __restrict__ state, const int* __restrict__ check,
                  const u8* __restrict__ label, const u8* __restrict__ eow, int trie_size, u64* __restrict__ status,
                  int* __restrict__ kinds, i64* __restrict__ id_offsets, const u8* __restrict__ marks,
                  const i64* __restrict__ bounds, const u64* __restrict__ symbols) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 tile_slot, prior;
    const i64 tile = lookback_tile(status, &tile_slot);
    const i64 t = tile * GT_BLOCK + threadIdx.x;
    const i64 n_tokens = token_offsets[n_spans];
    i64 count = 0;
    if (t < n_tokens) {
        int kind = values[t];
        i64 span = -1;  // the user symbol's span holding token t
        if (*symbols) {
            const i64 k = offsets_lower_bound(bounds, n_spans, starts[t] + 1) - 1;
            if (marks[bounds[k]] == GT_LT_SYMBOL_MARK) span = k;
        }
        if (span >= 0) {  // a span that spells no piece: its bytes' ids
            const int id = spelled(data, bounds[span], bounds[span + 1], state, check, label, eow, trie_size);
            kind = id < 0 ? GT_LT_BYTES : starts[t] > bounds[span] ? GT_LT_MERGED : id;
        } else if (kind < 0 && finish == GT_LT_LOOKUP) {
            // the piece the fallback character spells (every piece but those holding a NUL byte)
            kind = spelled(data, starts[t], ends[t], state, check, label, eow, trie_size);
            kind = kind >= 0 ? kind : GT_LT_BYTES;
        } else if (kind < 0 && finish == GT_LT_MERGE) {
            // an unknown token after an unknown one of its span joins that one's run
            const i64 k = offsets_lower_bound(token_offsets, n_spans, t);
            const bool first = k <= n_spans && token_offsets[k] == t;
            kind = !first && values[t - 1] < 0 ? GT_LT_MERGED : unk_id;
        } else if (kind < 0) {
            kind = GT_LT_BYTES;
        }
        kinds[t] = kind;
        count = kind >= 0 ? 1 : kind == GT_LT_BYTES ? ends[t] - starts[t] : 0;
    }
    i64 total;
    const i64 at = lookback_prefix(count, status, tile, scratch, &prior, &total);
    if (t < capacity) id_offsets[t] = at;
    if (t == capacity - 1) id_offsets[capacity] = at + count;
}

// Per thread: token t (its ids, starts and ends at id_offsets[t]) and row t (row_offsets[t]: the
// first id of its first span). A run of unknown tokens is one id from its first token's start to
// its last token's end, which the run's last token writes.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
lattice_ids(const u8* __restrict__ data, const i64* __restrict__ token_offsets, i64 n_spans,
            const i64* __restrict__ starts, const i64* __restrict__ ends, const int* __restrict__ kinds,
            const i64* __restrict__ id_offsets, const int* __restrict__ byte_ids, const i64* __restrict__ offsets,
            i64 n_rows, const i64* __restrict__ bounds, i64 by_rows, int* __restrict__ ids,
            i64* __restrict__ id_starts, i64* __restrict__ id_ends, i64* __restrict__ row_offsets) {
    const i64 t = global_thread_index();
    const i64 n_tokens = token_offsets[n_spans];
    if (t < n_tokens) {
        const int kind = kinds[t];
        const i64 out = id_offsets[t];
        const bool run_goes_on = t + 1 < n_tokens && kinds[t + 1] == GT_LT_MERGED;
        if (kind >= 0) {
            ids[out] = kind;
            id_starts[out] = starts[t];
            if (!run_goes_on) id_ends[out] = ends[t];
        } else if (kind == GT_LT_BYTES) {
            for (i64 b = starts[t]; b < ends[t]; ++b) {
                ids[out + b - starts[t]] = byte_ids[data[b]];
                id_starts[out + b - starts[t]] = b;
                id_ends[out + b - starts[t]] = b + 1;
            }
        } else if (!run_goes_on) {
            id_ends[out - 1] = ends[t];  // the run's last token: the end of the run's one id
        }
    }
    if (t <= n_rows) {
        const i64 span = by_rows ? t : offsets_lower_bound(bounds, n_spans, offsets[t]);
        row_offsets[t] = id_offsets[token_offsets[span]];
    }
}
