// pre_tokenizer.cu -- the pre-tokenizer's split: leftmost-longest matching of a DFA over symbols.
//
// Symbols: the character classes of utf8.cuh (OTHER, DIGIT, ALPHA, HAN), except that the space
// symbol (U+2581 by default) is SPACE, an apostrophe is APOSTROPHE, and whitespace characters
// such as tab are OTHER. The DFA (table, accepting states) is compiled on the host by
// gpu_text/tokenizer/pre_tokenizer.py; state 0 is dead, state 1 starts a match.
//
// Parallelism: `joinable[a][b]` is 0 when no match contains symbol a followed by b, so a
// pre-token starts before b whatever came earlier. pretokenize_cuts marks those positions (and
// every string start) byte-parallel; pretokenize_scan then gives each piece between two cuts its
// own thread, which runs the DFA from the piece's start, keeps the longest accepting prefix,
// restarts there, and marks each pre-token start. Long strings thus spread over many threads;
// only a run that no cut divides (a 1 MB word) stays on one.
#include "utf8.cuh"

#define PT_SYMBOLS 6
#define PT_OTHER 0
#define PT_SPACE 1
#define PT_APOSTROPHE 5
#define PT_DEAD 0
#define PT_START 1

// Symbol of the character at p (the string or piece ends at `end`); *len gets its byte length
// (1 for a malformed byte, which decodes to U+FFFD, an OTHER).
__device__ __forceinline__ int pt_symbol_at(const u8* data, i64 p, i64 end, u32 space, int* len) {
    u32 cp;
    const int n = utf8_sequence_at(data + p, end - p, &cp);
    *len = n > 0 ? n : 1;
    if (cp == space) return PT_SPACE;
    if (cp == 0x27u) return PT_APOSTROPHE;
    const u8 c = char_class_of(cp);
    return c == GT_CLASS_SPACE ? PT_OTHER : (int)c;
}

// cuts[i] = 1 when byte i starts a string or a character that no match can join to the one before.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_cuts(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                 const u8* __restrict__ joinable, u32 space, u8* __restrict__ cuts) {
    const i64 i = global_thread_index();
    if (i >= n_bytes) return;
    const i64 s = string_of_byte(offsets, n_strings, i);
    const i64 begin = offsets[s], end = offsets[s + 1];
    u8 cut = 0;
    if (i == begin) {
        cut = 1;
    } else if (utf8_starts_char(data, i, begin, end)) {
        i64 p = i - 1;  // the previous character starts at most 3 bytes back
        while (p > begin && !utf8_starts_char(data, p, begin, end)) --p;
        int len;
        const int prev = pt_symbol_at(data, p, end, space, &len);
        const int cur = pt_symbol_at(data, i, end, space, &len);
        cut = joinable[prev * PT_SYMBOLS + cur] ? 0 : 1;
    }
    cuts[i] = cut;
}

// One thread per piece [seg_starts[k], seg_ends[k]): marks[p] = 1 + (symbol of the first
// character) at every pre-token start p. A cut always falls on a character start, so decoding
// with the piece's end as the limit reads the same characters as with the string's end.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_scan(const u8* __restrict__ data, const i64* __restrict__ seg_starts, const i64* __restrict__ seg_ends,
                 i64 n_segments, const int* __restrict__ table, const u8* __restrict__ accepting, u32 space,
                 u8* __restrict__ marks) {
    const i64 k = global_thread_index();
    if (k >= n_segments) return;
    const i64 end = seg_ends[k];
    for (i64 p = seg_starts[k]; p < end;) {
        int len;
        const int first = pt_symbol_at(data, p, end, space, &len);
        i64 match_end = p + len;  // an unmatched character stands alone
        int state = PT_START, sym = first;
        for (i64 q = p;;) {
            state = table[state * PT_SYMBOLS + sym];
            if (state == PT_DEAD) break;
            q += len;
            if (accepting[state]) match_end = q;
            if (q >= end) break;
            sym = pt_symbol_at(data, q, end, space, &len);
        }
        marks[p] = (u8)(1 + first);
        p = match_end;
    }
}
