// bpe.cu -- BPE encoding of pre-tokens by replaying merges in score order (SentencePiece's rule).
//
// Per pre-token: start from one symbol per character; every adjacent pair whose concatenation is a
// piece goes into a max-heap keyed (score, then smaller left position); pop, skip stale pairs
// (a side already merged away or resized), merge, and offer the new symbol's two neighbour pairs.
// O(n log n) per pre-token. Leftover symbols that are not pieces fall back to <0xXX> byte pieces
// (or the unknown id). One thread per pre-token; the linked list and heap live in global scratch
// indexed by the pre-token's byte positions (heap: 3 slots per byte, enough for every push).
// Pass 1 (bpe_merge) merges and counts tokens, pass 2 (bpe_emit) writes ids and byte spans.
#include "utf8.cuh"
#include "double_array.cuh"

struct Vocab {
    const int* state;
    const int* check;
    const u8* label;
    const u8* eow;
    int size;
    const float* scores;     // score of every piece id
    const int* byte_ids;     // id of <0xXX> for every byte, or -1
    int unk_id;
};

// The piece id of data[begin, end), or -1.
__device__ __forceinline__ int piece_id(const Vocab& v, const u8* data, i64 begin, i64 end) {
    int pos = 0;
    for (i64 i = begin; i < end && pos >= 0; ++i) pos = trie_step(v.state, v.check, v.label, v.size, pos, data[i]);
    return pos > 0 ? trie_value(v.state, v.check, v.label, v.eow, v.size, pos) : -1;
}

// Heap order: higher score first; on equal scores the pair further left.
__device__ __forceinline__ bool heap_before(float sa, int la, float sb, int lb) {
    return sa > sb || (sa == sb && la < lb);
}

struct Heap {
    float* score;
    int* left;
    int* size;
    int count;

    __device__ void push(float s, int l, int z) {
        int i = count++;
        while (i > 0) {
            const int parent = (i - 1) / 2;
            if (!heap_before(s, l, score[parent], left[parent])) break;
            score[i] = score[parent]; left[i] = left[parent]; size[i] = size[parent];
            i = parent;
        }
        score[i] = s; left[i] = l; size[i] = z;
    }
    __device__ void pop(float* s, int* l, int* z) {
        *s = score[0]; *l = left[0]; *z = size[0];
        const float ls = score[--count];
        const int ll = left[count], lz = size[count];
        int i = 0;
        for (;;) {
            int child = 2 * i + 1;
            if (child >= count) break;
            if (child + 1 < count && heap_before(score[child + 1], left[child + 1], score[child], left[child])) ++child;
            if (!heap_before(score[child], left[child], ls, ll)) break;
            score[i] = score[child]; left[i] = left[child]; size[i] = size[child];
            i = child;
        }
        score[i] = ls; left[i] = ll; size[i] = lz;
    }
};

// Symbols of the pre-token [begin, end), relative positions: len[p] > 0 at a symbol's start (its
// byte length), next/prev link symbol starts (-1 at the ends).
__device__ void offer_pair(const Vocab& v, const u8* data, i64 begin, const int* len, int left, int right, Heap& heap) {
    if (left < 0 || right < 0) return;
    const int total = len[left] + len[right];
    const int id = piece_id(v, data, begin + left, begin + left + total);
    if (id >= 0) heap.push(v.scores[id], left, total);
}

// Tokens a final symbol adds: 1 if it is a piece; else one per byte (byte fallback), or 1 unknown
// token, which swallows the unknown symbols right after it (SentencePiece merges unknown runs).
__device__ __forceinline__ int symbol_tokens(const Vocab& v, const u8* data, i64 at, int length, bool* prev_unk) {
    const bool known = piece_id(v, data, at, at + length) >= 0;
    const bool was_unk = *prev_unk;
    *prev_unk = !known && v.byte_ids[0] < 0;
    if (known) return 1;
    if (v.byte_ids[0] >= 0) return length;
    return was_unk ? 0 : 1;
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_merge(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
          i64 n_tokens, const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
          const u8* __restrict__ eow, int trie_size, const float* __restrict__ scores, const int* __restrict__ byte_ids,
          int unk_id, int* __restrict__ sym_len, int* __restrict__ sym_next, int* __restrict__ sym_prev,
          float* __restrict__ heap_score, int* __restrict__ heap_left, int* __restrict__ heap_size,
          i64* __restrict__ counts) {
    const i64 t = global_thread_index();
    if (t >= n_tokens) return;
    const Vocab v = {state, check, label, eow, trie_size, scores, byte_ids, unk_id};
    const i64 begin = token_starts[t], end = token_ends[t];
    const int n = (int)(end - begin);
    int* len = sym_len + begin;
    int* next = sym_next + begin;
    int* prev = sym_prev + begin;
    Heap heap = {heap_score + 3 * begin, heap_left + 3 * begin, heap_size + 3 * begin, 0};
    // one symbol per character (a malformed byte is one character)
    int last = -1;
    for (int p = 0; p < n;) {
        u32 cp;
        const int l = utf8_sequence_at(data + begin + p, n - p, &cp);
        const int width = l > 0 ? l : 1;
        for (int k = 0; k < width; ++k) len[p + k] = 0;
        len[p] = width;
        prev[p] = last;
        next[p] = -1;
        if (last >= 0) next[last] = p;
        last = p;
        p += width;
    }
    for (int p = 0; p < n && next[p] >= 0; p = next[p]) offer_pair(v, data, begin, len, p, next[p], heap);
    while (heap.count > 0) {
        float s;
        int left, size;
        heap.pop(&s, &left, &size);
        const int right = next[left];
        if (len[left] == 0 || right < 0 || len[left] + len[right] != size) continue;  // stale
        len[left] = size;
        len[right] = 0;
        next[left] = next[right];
        if (next[right] >= 0) prev[next[right]] = left;
        offer_pair(v, data, begin, len, prev[left], left, heap);
        offer_pair(v, data, begin, len, left, next[left], heap);
    }
    i64 tokens = 0;
    bool prev_unk = false;
    for (int p = 0; p < n; p = next[p] >= 0 ? next[p] : n) tokens += symbol_tokens(v, data, begin + p, len[p], &prev_unk);
    counts[t] = tokens;
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
bpe_emit(const u8* __restrict__ data, const i64* __restrict__ token_starts, const i64* __restrict__ token_ends,
         i64 n_tokens, const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
         const u8* __restrict__ eow, int trie_size, const int* __restrict__ byte_ids, int unk_id,
         const int* __restrict__ sym_len, const int* __restrict__ sym_next, const i64* __restrict__ out_offsets,
         int* __restrict__ ids, i64* __restrict__ id_starts, i64* __restrict__ id_ends) {
    const i64 t = global_thread_index();
    if (t >= n_tokens) return;
    const Vocab v = {state, check, label, eow, trie_size, nullptr, byte_ids, unk_id};
    const i64 begin = token_starts[t], end = token_ends[t];
    const int n = (int)(end - begin);
    i64 out = out_offsets[t];
    bool prev_unk = false;
    for (int p = 0; p < n; p = sym_next[begin + p] >= 0 ? sym_next[begin + p] : n) {
        const i64 at = begin + p;
        const int length = sym_len[at];
        const int id = piece_id(v, data, at, at + length);
        const bool unk = id < 0 && byte_ids[0] < 0;
        if (unk && prev_unk) {
            id_ends[out - 1] = at + length;  // extend the previous unknown token
        } else if (id >= 0 || byte_ids[0] < 0) {
            ids[out] = id >= 0 ? id : unk_id;
            id_starts[out] = at;
            id_ends[out] = at + length;
            ++out;
        } else {
            for (int k = 0; k < length; ++k, ++out) {
                ids[out] = byte_ids[data[at + k]];
                id_starts[out] = at + k;
                id_ends[out] = at + k + 1;
            }
        }
        prev_unk = unk;
    }
}
