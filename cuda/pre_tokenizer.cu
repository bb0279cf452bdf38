// pre_tokenizer.cu -- the pre-tokenizer's split: leftmost-longest matching of a DFA over symbols.
//
// Symbols: the character classes of utf8.cuh (OTHER, DIGIT, ALPHA, HAN), except that the space
// symbol (U+2581 by default) is SPACE, an apostrophe is APOSTROPHE, and whitespace characters
// such as tab are OTHER. The DFA (table, accepting states) is compiled on the host by
// gpu_text/tokenizer/pre_tokenizer.py; state 0 is dead, state 1 starts a match.
//
// Parallelism: `joinable[a][b]` is 0 when no match contains symbol a followed by b, so a
// pre-token starts before b whatever came earlier. pretokenize_cuts marks those positions (and
// every string start) byte-parallel; the chunked kernels below then follow the chain of
// pre-token starts a chunk per thread, with matches longer than a chunk crossed by per-chunk DFA
// summaries, so that no thread's work grows with a string or a run that no cut divides.
//
// User-defined symbols (SentencePiece's user_defined_symbols; a trie of piece ids, sym_width > 0)
// are taken whole as SentencePiece does: scanning each string a character at a time, the longest
// symbol at a character is one pre-token and the scan resumes after it; the text between symbols
// is split on its own. pretokenize_cuts finds the longest symbol at every character (symbol_at: its
// piece id << 8 | its byte length, 0 for none) and makes each such character a cut: a DFA match
// from a character the scan reaches stops at the first one, which the scan takes. Overlapping
// candidates are resolved exactly by the chain of the scan itself, a step per symbol or character
// (never longer than sym_width bytes), composed per chunk: pretokenize_summary tabulates, per
// chunk and entry offset k < sym_width, where the chain entering the chunk at k leaves it (a pass
// backwards over the chunk) and composes PT_SUPER of those tables per block; and
// pretokenize_land_join starts each chunk's chain where the scan truly enters it (from its string's
// start, a lookup per chunk or per PT_SUPER chunks), so the speculative chains never start inside
// a symbol and meet the true one as they do without symbols.
#include "double_array.cuh"
#include "lookback.cuh"
#include "step_counter.cuh"
#include "utf8.cuh"

#define PT_SYMBOLS 6
#define PT_OTHER 0
#define PT_SPACE 1
#define PT_APOSTROPHE 5
#define PT_DEAD 0
#define PT_START 1
#define PT_SYMBOL_MARK (PT_SYMBOLS + 1)  // the mark of a user symbol's pre-token
#define PT_SYMBOL_BITS 8                 // symbol_at: piece id << PT_SYMBOL_BITS | byte length

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

// The longest user symbol starting at p in the string ending at `end`: its piece id << 8 | its byte
// length, or 0 (a walk of the trie, at most the longest symbol's bytes).
__device__ __forceinline__ int longest_symbol(const u8* data, i64 p, i64 end, const int* state, const int* check,
                                              const u8* label, const u8* eow, int trie_size) {
    int pos = 0, found = 0;
    for (i64 q = p; q < end; ++q) {
        GT_STEP();
        pos = trie_step(state, check, label, trie_size, pos, data[q]);
        if (pos < 0) break;
        const int value = trie_value(state, check, label, eow, trie_size, pos);
        if (value >= 0) found = value << PT_SYMBOL_BITS | (int)(q + 1 - p);
    }
    return found;
}

// A dictionary cutter's words (a dictionary cn): Han pre-tokens (maximal Han runs under the word
// and isolate splits) are cut where a word of DictCut's Segmenter, which segments the same runs of
// the same rows, starts: word_marks[i] != 0 (has_words) at a Han character makes it a Han
// pre-token's start, 1 + PT_HAN (a Han run's first word is one already; the other words are no
// Han pre-tokens' and leave the marks alone).
#define PT_HAN 4

// cuts[i] = 1 when byte i starts a string or a character that no match can join to the one before,
// or (sym_width > 0) a character where a user symbol starts; marks[i] = 0, or a dictionary word's
// mark (above); symbol_at[i] (when sym_width > 0): the longest user symbol at the character starting
// at i, 0 elsewhere; zeroed[i] = 0 for i < n_zeroed.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_cuts(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                 const u8* __restrict__ joinable, u32 space, u8* __restrict__ cuts, u8* __restrict__ marks,
                 const int* __restrict__ trie_state, const int* __restrict__ trie_check,
                 const u8* __restrict__ trie_label, const u8* __restrict__ trie_eow, int trie_size, int sym_width,
                 int* __restrict__ symbol_at, const u8* __restrict__ word_marks, int has_words,
                 u64* __restrict__ zeroed, i64 n_zeroed) {
    const i64 i = global_thread_index();
    if (i < n_zeroed) zeroed[i] = 0;  // pretokenize_land_join's tile order
    if (i >= n_bytes) return;
    const i64 s = string_of_byte(offsets, n_strings, i);
    const i64 begin = offsets[s], end = offsets[s + 1];
    u8 cut = 0;
    const bool starts = i == begin || utf8_starts_char(data, i, begin, end);
    int len;
    const int cur = starts ? pt_symbol_at(data, i, end, space, &len) : PT_OTHER;
    // pretokenize_scan marks the split's starts
    marks[i] = has_words && word_marks[i] && cur == PT_HAN ? (u8)(1 + PT_HAN) : (u8)0;
    if (i == begin) {
        cut = 1;
    } else if (starts) {
        i64 p = i - 1;  // the previous character starts at most 3 bytes back
        while (p > begin && !utf8_starts_char(data, p, begin, end)) --p;
        const int prev = pt_symbol_at(data, p, end, space, &len);
        cut = joinable[prev * PT_SYMBOLS + cur] ? 0 : 1;
    }
    if (sym_width > 0) {
        const int found = starts ? longest_symbol(data, i, end, trie_state, trie_check, trie_label, trie_eow,
                                                  trie_size) : 0;
        symbol_at[i] = found;
        if (found != 0) cut = 1;
    }
    cuts[i] = cut;
}

// ---------------------------------------------------------------- the scan, in chunks
// A string's pre-tokens start at its first character and each next one where the longest DFA
// match from the previous start ends (a lone character when nothing matches). No match crosses a
// cut, so every cut is a pre-token start whatever came before. The chain of starts is followed
// per chunk of PT_CHUNK bytes, as cuda/normalizer.cu follows its steps:
//   pretokenize_summary  per chunk and DFA state d: where a match entering the chunk in state d
//                        goes: the state it leaves in (or PT_STOP: it died, or met a cut or the
//                        end of the batch) and its last accepting end in the chunk; then per block
//                        (PT_SUPER chunks) the same, composed from those: the super summary. A
//                        match longer than a chunk then costs one lookup per chunk up to the next
//                        PT_SUPER boundary, one per PT_SUPER chunks, and one per chunk after the last.
//   pretokenize_land_join  per chunk: the chain of the string crossing the chunk's end, from the
//                        chunk's first character (speculative) or the string's start (exact),
//                        to its first start past the chunk: land[c]; then, once the chunk before
//                        has landed, the chain from that landing to past the chunk: exits[c];
//                        exits[c] != land[c] marks the string.
//   pretokenize_resolve  per marked string: its chunks redone in order from the first marked one.
//   pretokenize_scan     per chunk: marks the pre-token starts of every string piece in it.
// Chains from different starts meet at the latest at the next cut, usually within a character
// or two. Per thread: PT_CHUNK characters, plus for a match longer than that at most
// 2 * PT_SUPER lookups and one per PT_SUPER * PT_CHUNK bytes (64 KiB) it covers (scan; twice
// that in land_join); PT_CHUNK characters for the summary (each updating every DFA state), plus PT_SUPER
// lookups for the super summary's composing threads.
#define PT_CHUNK 256
#define PT_SUPER 256
#define PT_MAX_STATES 16
#define PT_STOP (-1)
#define PT_NONE 0x7fffffffffffffffLL

// What the chunked kernels read: the input, its cuts and the DFA with its chunk summaries.
struct ScanInput {
    const u8* data;
    const i64* offsets;
    i64 n_strings, n_bytes;
    const u8* cuts;
    const int* table;
    const u8* accepting;
    int n_states;
    u32 space;
    const int* exit_state;     // [chunk * n_states + d]
    const i64* last_accept;    // [chunk * n_states + d], -1 when none
    const i64* first_char;     // [chunk]: the first character start at or after the chunk's start
    const int* super_exit;     // [super chunk * n_states + d]: the same per PT_SUPER chunks
    const i64* super_accept;
    const int* symbol_at;      // [byte]: the longest user symbol there (pretokenize_cuts); sym_width > 0
    int sym_width;             // 0 without user symbols, else max(longest symbol, 4) bytes <= PT_CHUNK
    const u8* sym_exit;        // [chunk * sym_width + k]: where the scan entering at offset k leaves
    const u8* super_sym_exit;  // [super chunk * sym_width + k]: the same per PT_SUPER chunks
};

__device__ __forceinline__ i64 pt_chunk_end(i64 c, i64 n_bytes) { return min((c + 1) * PT_CHUNK, n_bytes); }

// The first character start at or after `at` in the string [begin, end) (at most 3 bytes on).
__device__ __forceinline__ i64 first_char_at(const u8* data, i64 at, i64 begin, i64 end) {
    while (at < end && !utf8_starts_char(data, at, begin, end)) ++at;
    return at;
}

// End of the pre-token starting at p in the string ending at `end`: a user symbol's end when one
// starts at p, else the longest accepted DFA match, or the first character alone. Runs the DFA to
// the end of p's chunk, then one summary lookup per chunk.
__device__ __forceinline__ i64 pre_token_end(const ScanInput& in, i64 p, i64 end) {
    if (in.sym_width > 0 && in.symbol_at[p] != 0) return p + (in.symbol_at[p] & ((1 << PT_SYMBOL_BITS) - 1));
    int len;
    int sym = pt_symbol_at(in.data, p, end, in.space, &len);
    i64 match_end = p + len;  // an unmatched character stands alone
    int state = PT_START;
    const i64 chunk = p / PT_CHUNK, stop = pt_chunk_end(chunk, in.n_bytes);
    i64 q = p;
    for (;;) {
        GT_STEP();
        state = in.table[state * PT_SYMBOLS + sym];
        if (state == PT_DEAD) return match_end;
        q += len;
        if (in.accepting[state]) match_end = q;
        if (q >= end || in.cuts[q]) return match_end;  // a match ends at a cut
        if (q >= stop) break;
        sym = pt_symbol_at(in.data, q, end, in.space, &len);
    }
    // q is the first character of a later chunk: follow the summaries, PT_SUPER chunks at a time
    // from a multiple of PT_SUPER on
    for (i64 k = q / PT_CHUNK;;) {
        GT_STEP();
        const bool whole = k % PT_SUPER == 0;
        const i64 at = (whole ? k / PT_SUPER : k) * in.n_states + state;
        const i64 accept = whole ? in.super_accept[at] : in.last_accept[at];
        if (accept >= 0) match_end = accept;
        state = whole ? in.super_exit[at] : in.exit_state[at];
        if (state == PT_STOP) return match_end;
        k += whole ? PT_SUPER : 1;
    }
}

// One step of the user-symbol scan from p (a character or a symbol; never past the string's end).
__device__ __forceinline__ int symbol_scan_step(const u8* data, i64 p, i64 end, const int* symbol_at) {
    const int found = symbol_at[p];
    if (found != 0) return found & ((1 << PT_SYMBOL_BITS) - 1);
    u32 cp;
    const int n = utf8_sequence_at(data + p, end - p, &cp);
    return n > 0 ? n : 1;
}

// exits[k], k < sym_width: where the scan entering the chunk [begin, stop) at begin + k leaves it,
// as an offset from stop (a step is at most sym_width bytes, so below sym_width). Backwards over
// the chunk, each position's exit from its step's. A string's scan reaches its end exactly, so a
// scan from anywhere in an earlier string passes through the next string's start.
__device__ __forceinline__ void symbol_summary(const u8* data, const i64* offsets, i64 n_strings, i64 begin, i64 stop,
                                               const int* symbol_at, int sym_width, u8* exits) {
    u8 exit_of[PT_CHUNK];
    i64 r = string_of_byte(offsets, n_strings, stop - 1);
    for (i64 p = stop - 1; p >= begin; --p) {
        GT_STEP();
        if (offsets[r] > p) r = string_of_byte(offsets, r, p);  // the string before (past any empty ones)
        const i64 next = p + symbol_scan_step(data, p, offsets[r + 1], symbol_at);
        exit_of[p - begin] = next >= stop ? (u8)(next - stop) : exit_of[next - begin];
    }
    for (int k = 0; k < sym_width; ++k) exits[k] = k < stop - begin ? exit_of[k] : 0;
}

// Chunk c's summary: per DFA state d, the state a match entering the chunk in d leaves it in
// (PT_STOP when it stops inside) and its last accepting end there; the chunk's first character;
// with user symbols, the symbol scan's exits (symbol_summary).
__device__ __forceinline__ void chunk_summary(const u8* data, const i64* offsets, i64 n_strings, i64 n_bytes, i64 c,
                                              const u8* cuts, const int* table, const u8* accepting, int n_states,
                                              u32 space, int* exit_state, i64* last_accept, i64* first_char,
                                              const int* symbol_at, int sym_width, u8* sym_exit) {
    const i64 begin = c * PT_CHUNK, stop = pt_chunk_end(c, n_bytes);
    if (sym_width > 0)
        symbol_summary(data, offsets, n_strings, begin, stop, symbol_at, sym_width, sym_exit + c * sym_width);
    const i64 s = string_of_byte(offsets, n_strings, begin), end = offsets[s + 1];
    i64 q = first_char_at(data, begin, offsets[s], end);
    first_char[c] = q;
    int states[PT_MAX_STATES];
    i64 accepted[PT_MAX_STATES];
    for (int d = 0; d < n_states; ++d) { states[d] = d == PT_DEAD ? PT_STOP : d; accepted[d] = -1; }
    // A match entering the chunk continues only while no cut and no string end comes (a string
    // ends where the next one starts, at a cut, or at the end of the batch).
    bool alive = q < stop;
    if (q >= n_bytes || cuts[q]) alive = false;
    while (alive) {
        GT_STEP();
        int len;
        const int sym = pt_symbol_at(data, q, end, space, &len);
        q += len;
        bool any = false;
        for (int d = 1; d < n_states; ++d) {
            if (states[d] == PT_STOP) continue;
            const int next = table[states[d] * PT_SYMBOLS + sym];
            if (next == PT_DEAD) { states[d] = PT_STOP; continue; }
            states[d] = next;
            if (accepting[next]) accepted[d] = q;
            any = true;
        }
        if (!any || q >= end || cuts[q]) {  // every match stops here
            for (int d = 0; d < n_states; ++d) states[d] = PT_STOP;
            alive = false;
        } else if (q >= stop) {
            alive = false;
        }
    }
    for (int d = 0; d < n_states; ++d) {
        exit_state[c * n_states + d] = q < stop ? PT_STOP : states[d];
        last_accept[c * n_states + d] = accepted[d];
    }
}


// The block's PT_SUPER chunks are super chunk K = blockIdx.x (GT_BLOCK == PT_SUPER): once their
// summaries are written, thread d < n_states composes where a match entering K in state d goes, and
// thread n_states + k (k < sym_width) where the symbol scan entering K at offset k leaves it (a
// thread does both only when n_states + sym_width > GT_BLOCK, a symbol of over 240 bytes).
static_assert(GT_BLOCK == PT_SUPER, "pretokenize_summary composes a block's chunks into its super chunk");

__device__ __forceinline__ void compose_super_chunk(i64 K, i64 n_chunks, int n_states, const int* exit_state,
                                                    const i64* last_accept, int* super_exit, i64* super_accept,
                                                    int sym_width, const u8* sym_exit, u8* super_sym_exit) {
    const i64 last = min((K + 1) * PT_SUPER, n_chunks);
    const int t = (int)threadIdx.x;
    if (t < n_states) {
        int state = t == PT_DEAD ? PT_STOP : t;
        i64 accept = -1;
        for (i64 k = K * PT_SUPER; k < last && state != PT_STOP; ++k) {
            GT_STEP();
            const i64 at = k * n_states + state;
            if (last_accept[at] >= 0) accept = last_accept[at];
            state = exit_state[at];
        }
        super_exit[K * n_states + t] = state;
        super_accept[K * n_states + t] = accept;
    }
    for (int k = (t - n_states + GT_BLOCK) % GT_BLOCK; k < sym_width; k += GT_BLOCK) {
        int at = k;
        for (i64 j = K * PT_SUPER; j < last; ++j) {
            GT_STEP();
            at = sym_exit[j * sym_width + at];
        }
        super_sym_exit[K * sym_width + k] = (u8)at;
    }
}

// Thread c: chunk c's summary (above); then its block composes its super chunk's.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_summary(const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_strings, i64 n_bytes,
                    i64 n_chunks, const u8* __restrict__ cuts, const int* __restrict__ table,
                    const u8* __restrict__ accepting, int n_states, u32 space, int* __restrict__ exit_state,
                    i64* __restrict__ last_accept, i64* __restrict__ first_char, const int* __restrict__ symbol_at,
                    int sym_width, u8* __restrict__ sym_exit, int* __restrict__ super_exit,
                    i64* __restrict__ super_accept, u8* __restrict__ super_sym_exit) {
    const i64 c = global_thread_index();
    if (c < n_chunks) chunk_summary(data, offsets, n_strings, n_bytes, c, cuts, table, accepting, n_states, space,
                                    exit_state, last_accept, first_char, symbol_at, sym_width, sym_exit);
    __syncthreads();  // the block's chunk summaries, written to global memory, are visible to the block
    compose_super_chunk(blockIdx.x, n_chunks, n_states, exit_state, last_accept, super_exit, super_accept, sym_width,
                        sym_exit, super_sym_exit);
}

// The string crossing the end of chunk c (-1 when none).
__device__ __forceinline__ i64 pt_crossing_string(const i64* offsets, i64 n_strings, i64 n_bytes, i64 c) {
    const i64 stop = pt_chunk_end(c, n_bytes);
    if (stop >= n_bytes) return -1;
    const i64 r = string_of_byte(offsets, n_strings, stop - 1);
    return offsets[r + 1] > stop ? r : -1;
}

// Follows the chain of pre-token starts from i while i < stop; returns the first start >= stop.
__device__ __forceinline__ i64 follow_chain(const ScanInput& in, i64 i, i64 stop, i64 end) {
    while (i < stop) i = pre_token_end(in, i, end);
    return i;
}

#define PT_SCAN_PARAMS                                                                                    \
    const u8 *__restrict__ data, const i64 *__restrict__ offsets, i64 n_strings, i64 n_bytes, i64 n_chunks, \
        const u8 *__restrict__ cuts, const int *__restrict__ table, const u8 *__restrict__ accepting,        \
        int n_states, u32 space, const int *__restrict__ exit_state, const i64 *__restrict__ last_accept,   \
        const i64 *__restrict__ first_char, const int *__restrict__ super_exit, const i64 *__restrict__ super_accept, \
        const int *__restrict__ symbol_at, int sym_width, const u8 *__restrict__ sym_exit,                  \
        const u8 *__restrict__ super_sym_exit
#define PT_SCAN_INPUT                                                                                          \
    ScanInput{data, offsets, n_strings, n_bytes, cuts, table, accepting, n_states, space, exit_state, last_accept, \
              first_char, super_exit, super_accept, symbol_at, sym_width, sym_exit, super_sym_exit}

// Where the user-symbol scan enters chunk c (> the chunk of row_start, its string's start): from
// the string's start (a scan from the chunk's first byte, in an earlier string when the string
// starts later, passes through it), a table lookup per chunk, or per PT_SUPER chunks when aligned.
__device__ __forceinline__ i64 symbol_scan_entry(const ScanInput& in, i64 c, i64 row_start) {
    i64 j = row_start / PT_CHUNK;
    int k = in.sym_exit[j * in.sym_width];
    for (++j; j < c;) {
        GT_STEP();
        if (j % PT_SUPER == 0 && j + PT_SUPER <= c) {
            k = in.super_sym_exit[j / PT_SUPER * in.sym_width + k];
            j += PT_SUPER;
        } else {
            k = in.sym_exit[j * in.sym_width + k];
            ++j;
        }
    }
    return c * PT_CHUNK + k;
}

// Chunk c's landing: every non-empty string starting in it starts unmarked; land[c] is where the
// chain of the string crossing the chunk's end (-1 when none) first starts past it.
__device__ __forceinline__ void land_chunk(const ScanInput& in, i64 c, i64* land, i64* first_marked) {
    const i64 begin = c * PT_CHUNK, stop = pt_chunk_end(c, in.n_bytes);
    for (i64 at = begin; at < stop;) {
        GT_STEP();
        const i64 r = string_of_byte(in.offsets, in.n_strings, at);
        if (in.offsets[r] >= begin) first_marked[r] = PT_NONE;
        at = in.offsets[r + 1];
    }
    const i64 r = pt_crossing_string(in.offsets, in.n_strings, in.n_bytes, c);
    if (r < 0) { land[c] = -1; return; }
    // speculative unless the string starts here; with user symbols never inside a symbol
    const i64 start = in.offsets[r] >= begin ? in.offsets[r]
                      : in.sym_width > 0 ? symbol_scan_entry(in, c, in.offsets[r]) : in.first_char[c];
    land[c] = follow_chain(in, start, stop, in.offsets[r + 1]);
}

// Chunk c's join: its entry (land[c - 1] for a string continued from chunk c - 1) and, for a
// continued string crossing its end, the chain from there: exits[c]; first_marked[r] gets the
// first chunk where that differs from the speculative land[c].
__device__ __forceinline__ void join_chunk(const ScanInput& in, i64 c, const i64* land, i64* exits, i64* entries,
                                           i64* first_marked) {
    const i64 begin = c * PT_CHUNK, stop = pt_chunk_end(c, in.n_bytes);
    const i64 first = string_of_byte(in.offsets, in.n_strings, begin);
    if (in.offsets[first] < begin) entries[c] = __ldcg(land + c - 1);  // a string continued from chunk c - 1
    const i64 r = pt_crossing_string(in.offsets, in.n_strings, in.n_bytes, c);
    if (r < 0 || in.offsets[r] >= begin) return;  // nothing continued crosses: land[c] is exact
    const i64 exit = follow_chain(in, __ldcg(land + c - 1), stop, in.offsets[r + 1]);
    exits[c] = exit;
    if (exit != land[c]) atomicMin((unsigned long long*)&first_marked[r], (unsigned long long)c);
}

// Land, then join, in one launch: a block's chunks are a tile in launch order (lookback.cuh's tile
// counter, order[0]; order: 1 + gridDim.x zeros); after landing them it waits for the tile before it
// to have landed (order[tile]) and marks its own (order[1 + tile]), so that a join reads the land of
// the chunk before it, and its atomicMin comes after the unmarking of its string's first chunk,
// whatever block that was in. A tile waits only on earlier ones, which never wait on it.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_land_join(PT_SCAN_PARAMS, u64* __restrict__ order, i64* __restrict__ land, i64* __restrict__ exits,
                      i64* __restrict__ entries, i64* __restrict__ first_marked) {
    __shared__ i64 tile_slot;
    const i64 tile = lookback_tile(order, &tile_slot);
    const i64 c = tile * GT_BLOCK + threadIdx.x;
    const ScanInput in = PT_SCAN_INPUT;
    if (c < n_chunks) land_chunk(in, c, land, first_marked);
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        if (tile > 0) {
            while (atomicAdd(&order[tile], 0ull) == 0) __nanosleep(64);
        }
        __threadfence();
        atomicExch(&order[1 + tile], 1ull);
    }
    __syncthreads();
    if (c < n_chunks) join_chunk(in, c, land, exits, entries, first_marked);
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_resolve(PT_SCAN_PARAMS, const i64* __restrict__ land, i64* __restrict__ exits,
                    i64* __restrict__ entries, const i64* __restrict__ first_marked) {
    const i64 r = global_thread_index();
    if (r >= n_strings || offsets[r] == offsets[r + 1] || first_marked[r] == PT_NONE) return;
    const ScanInput in = PT_SCAN_INPUT;
    const i64 end = offsets[r + 1];
    i64 i = exits[first_marked[r]];  // its entry was right, so this exit is
    for (i64 c = first_marked[r] + 1; c * PT_CHUNK < end; ++c) {
        GT_STEP();
        const i64 stop = pt_chunk_end(c, n_bytes);
        entries[c] = i;
        if (stop >= end) break;  // the string's last chunk
        if (i == land[c - 1]) {  // the join started this chunk here: its exit holds
            i = exits[c];
            continue;
        }
        i = follow_chain(in, i, stop, end);
        exits[c] = i;
    }
}

// marks[p] = 1 + (symbol of the first character) at every pre-token start p, PT_SYMBOL_MARK at a
// user symbol's.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
pretokenize_scan(PT_SCAN_PARAMS, const i64* __restrict__ entries, u8* __restrict__ marks) {
    const i64 c = global_thread_index();
    if (c >= n_chunks) return;
    const ScanInput in = PT_SCAN_INPUT;
    const i64 begin = c * PT_CHUNK, stop = pt_chunk_end(c, n_bytes);
    for (i64 at = begin; at < stop;) {
        const i64 r = string_of_byte(offsets, n_strings, at), row_begin = offsets[r], row_end = offsets[r + 1];
        for (i64 p = row_begin < begin ? entries[c] : row_begin; p < min(row_end, stop);) {
            int len;
            const bool symbol = sym_width > 0 && symbol_at[p] != 0;
            marks[p] = symbol ? (u8)PT_SYMBOL_MARK : (u8)(1 + pt_symbol_at(data, p, row_end, space, &len));
            p = pre_token_end(in, p, row_end);
        }
        at = row_end;
    }
}
