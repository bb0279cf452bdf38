// normalizer.cu -- SentencePiece normalization: charsmap by longest match, then space handling.
//
// The passes (the rules are in gpu_text/tokenizer/normalizer.py):
//   normalize_match  one thread per byte: the step that would start there (longest charsmap
//                    match, else one character, else one malformed byte -> U+FFFD). All the trie
//                    walks happen here, in parallel.
//   normalize_chunk_* one thread per chunk of NORMALIZE_CHUNK bytes: which steps each string
//                    takes (a match starts where the previous one ended, which no thread can know
//                    locally: speculative walks per chunk, joined; see "the walk, in chunks") and,
//                    per step, how many leading spaces to drop and how many bytes it emits.
//   normalize_slots  one thread per slot: strips trailing space symbols from the counts when
//                    collapsing (see "trailing symbols"), then their scan by decoupled look-back.
//   normalize_write  one thread per byte: writes the emitted bytes of the step starting there at
//                    its place from the exclusive scan of the counts; in the packed layout it also
//                    writes every row's offset and alignment end entry, so the output is final.
//   normalize_trim   one thread per string: strips trailing space symbols from written rows,
//                    only when the counts could not be trimmed exactly (then the host packs rows).
// Counts live in "slots": slot offsets[r] + r is string r's dummy prefix, slot i + r + 1 is byte i
// of string r, so one scan over the slots places everything, dummy prefixes included.
#include "double_array.cuh"
#include "lookback.cuh"
#include "step_counter.cuh"
#include "utf8.cuh"

#define STEP_COPY (-1)         // no charsmap match: the character is copied
#define STEP_REPLACEMENT (-2)  // a malformed byte: U+FFFD
#define SPACE_BYTE 0x20

// Where a step's output is: target bytes, input bytes, or U+FFFD.
struct StepOutput {
    int kind;  // >= 0: a target number
    i64 begin, end;

    __device__ StepOutput(int source, i64 at, int length, const i64* target_offsets) : kind(source) {
        if (source >= 0) { begin = target_offsets[source]; end = target_offsets[source + 1]; }
        else if (source == STEP_COPY) { begin = at; end = at + length; }
        else { begin = 0; end = 3; }
    }
    __device__ __forceinline__ u8 at(i64 p, const u8* targets, const u8* data) const {
        if (kind >= 0) return targets[p];
        if (kind == STEP_COPY) return data[p];
        return p == 0 ? 0xEFu : (p == 1 ? 0xBFu : 0xBDu);
    }
};

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_match(const int* __restrict__ state, const int* __restrict__ check, const u8* __restrict__ label,
                const u8* __restrict__ eow, int trie_size, const u8* __restrict__ data,
                const i64* __restrict__ offsets, i64 n_rows, i64 n_bytes, int* __restrict__ steps,
                int* __restrict__ sources, i64* __restrict__ row_last, i64* __restrict__ counts,
                int* __restrict__ drops, u64* __restrict__ zeroed, i64 n_zeroed) {
    const i64 t = global_thread_index();
    // the straddle flag and the look-back words of normalize_chunk_land_join and normalize_slots
    if (t < n_zeroed) zeroed[t] = 0;
    // zero every count the emission may leave unwritten: thread r < n_rows the dummy slot of row r,
    // thread t byte t's slot
    if (t < n_rows) counts[offsets[t] + t] = 0;
    if (t < n_rows) row_last[t] = -1;  // no step with output other than symbols seen yet
    if (t >= n_bytes) return;
    const i64 r = string_of_byte(offsets, n_rows, t), end = offsets[r + 1];
    counts[t + r + 1] = 0;
    drops[t] = 0;
    int pos = 0, length = 0, source = -1;
    for (i64 i = t; i < end; ++i) {  // at most the longest charsmap key
        GT_STEP();
        pos = trie_step(state, check, label, trie_size, pos, data[i]);
        if (pos < 0) break;
        const int value = trie_value(state, check, label, eow, trie_size, pos);
        if (value >= 0) { length = (int)(i + 1 - t); source = value; }
    }
    if (length == 0) {
        u32 cp;
        length = utf8_sequence_at(data + t, end - t, &cp);
        source = length > 0 ? STEP_COPY : STEP_REPLACEMENT;
        if (length == 0) length = 1;
    }
    steps[t] = length;
    sources[t] = source;
}

// ---------------------------------------------------------------- the walk, in chunks
// The steps a string takes start at its first byte and follow i += steps[i]. Which positions it
// visits is a serial question, but walks started at different positions of the same text meet
// within a few steps (a step is a character or a charsmap key, and both re-align at the next
// character start), so the walk is cut into chunks of NORMALIZE_CHUNK bytes of the batch:
//   normalize_chunk_land_join  per chunk, land: the walk of the string crossing the chunk's end,
//                           from the chunk's start (speculative) or from the string's start
//                           (exact), to its first position past the chunk: land[c]; then, once
//                           the chunk before has landed, join: the walk from the previous chunk's
//                           landing (the true entry if the earlier chunks were right) to past the
//                           chunk: exit[c], and the space state it leaves (state[c]).
//                           exit[c] != land[c] means the walks did not meet inside the chunk: the
//                           string is marked.
//                           Then, once every chunk up to its own has joined, the thread of a
//                           marked string's last chunk resolves it: redoes its chunks in order from
//                           the first marked one, each from the true entry (O(1) per chunk where
//                           the entry is the one the join assumed). Exact; serial only where walks
//                           never meet.
//   normalize_chunk_emit    per chunk: walks the true positions of every string piece in the
//                           chunk and decides per step how many leading spaces to drop and how
//                           many bytes it emits, from the space state carried into the chunk.
// Space state: when collapsing, a step's leading spaces are dropped after a space. A step with an
// empty output leaves the state as it was; any other step sets it to "its last byte is a space"
// (NORMALIZE_KEEP marks "no such step yet"). The state entering a chunk is that of the last chunk
// before it that set one (in the emission's tile of GT_BLOCK chunks by a running maximum, else by
// a look-back over the earlier tiles, 32 a step: a step per 32 tiles of chunks that set none).
// Per thread: at most NORMALIZE_CHUNK steps plus one per string starting in the chunk (land,
// join, emit), and O(log) searches; resolve walks only the chunks whose entry was wrong.
#define NORMALIZE_CHUNK 256
#define NORMALIZE_KEEP (-1)
#define NORMALIZE_NONE 0x7fffffffffffffffLL

// Bytes of chunk c: [chunk_begin(c), chunk_end).
__device__ __forceinline__ i64 chunk_begin_of(i64 c) { return c * NORMALIZE_CHUNK; }

// The space state after a step with output o (NORMALIZE_KEEP: unchanged).
__device__ __forceinline__ int step_state(const StepOutput& o, int collapse, const u8* targets, const u8* data) {
    if (o.end == o.begin) return NORMALIZE_KEEP;
    return collapse && o.at(o.end - 1, targets, data) == SPACE_BYTE;
}

// Walks from i while i < stop, updating *state (as step_state); returns the first position >= stop.
__device__ __forceinline__ i64 walk_state(const int* steps, const int* sources, const u8* targets,
                                          const i64* target_offsets, const u8* data, i64 i, i64 stop, int collapse,
                                          int* state) {
    for (; i < stop; i += steps[i]) {
        GT_STEP();
        const StepOutput o(sources[i], i, steps[i], target_offsets);
        const int s = step_state(o, collapse, targets, data);
        if (s != NORMALIZE_KEEP) *state = s;
    }
    return i;
}

// The string crossing the end of chunk c (-1 when none: a string ends at the chunk's end, or it is
// the last chunk).
__device__ __forceinline__ i64 crossing_string(const i64* offsets, i64 n_rows, i64 n_bytes, i64 c) {
    const i64 stop = min(chunk_begin_of(c) + NORMALIZE_CHUNK, n_bytes);
    if (stop >= n_bytes) return -1;
    const i64 r = string_of_byte(offsets, n_rows, stop - 1);
    return offsets[r + 1] > stop ? r : -1;
}

// Chunk c's landing (land[c]); strings starting in it start unmarked.
__device__ __forceinline__ void land_chunk(const int* steps, const i64* offsets, i64 n_rows, i64 n_bytes, i64 c,
                                           i64* land, i64* first_marked) {
    const i64 begin = chunk_begin_of(c), stop = min(begin + NORMALIZE_CHUNK, n_bytes);
    // Every non-empty string starting here starts unmarked (empty ones are skipped by the search).
    for (i64 at = begin; at < stop;) {
        GT_STEP();
        const i64 r = string_of_byte(offsets, n_rows, at);
        if (offsets[r] >= begin) first_marked[r] = NORMALIZE_NONE;
        at = offsets[r + 1];
    }
    const i64 r = crossing_string(offsets, n_rows, n_bytes, c);
    if (r < 0) { land[c] = -1; return; }
    i64 i = max(offsets[r], begin);  // speculative unless the string starts in this chunk
    for (; i < stop; i += steps[i]) GT_STEP();
    land[c] = i;
}

// Chunk c's walk from chunk c - 1's landing (land[c - 1] written): its entry, exit and state; the
// crossing string is marked where the walks did not meet.
__device__ __forceinline__ void join_chunk(const int* steps, const int* sources, const u8* targets,
                                           const i64* target_offsets, const u8* data, const i64* offsets, i64 n_rows,
                                           i64 n_bytes, i64 c, int collapse, const i64* land, i64* exits,
                                           i64* entries, i64* states, i64* first_marked) {
    const i64 begin = chunk_begin_of(c), stop = min(begin + NORMALIZE_CHUNK, n_bytes);
    const i64 first = string_of_byte(offsets, n_rows, begin);
    // land[c - 1] may be another block's, written in this launch: read past L1 (__ldcg)
    const i64 entry = c > 0 ? __ldcg(land + c - 1) : 0;
    if (offsets[first] < begin) entries[c] = entry;  // a string continued from chunk c - 1
    const i64 r = crossing_string(offsets, n_rows, n_bytes, c);
    states[c] = 0;  // a chunk nothing crosses has no successor to hand a state to
    if (r < 0) return;
    const bool continued = offsets[r] < begin;
    int state = continued ? NORMALIZE_KEEP : collapse;
    const i64 exit = walk_state(steps, sources, targets, target_offsets, data, continued ? entry : offsets[r],
                                stop, collapse, &state);
    exits[c] = exit;
    states[c] = state;
    if (exit != land[c]) atomicMin((unsigned long long*)&first_marked[r], (unsigned long long)c);
}

// Redoes marked string r's chunks in order from its first marked one, each from the true entry
// (O(1) per chunk where the entry is the one the join assumed), once every chunk of it has joined.
__device__ __forceinline__ void resolve_string(const int* steps, const int* sources, const u8* targets,
                                               const i64* target_offsets, const u8* data, const i64* offsets,
                                               i64 n_bytes, int collapse, const i64* land, i64* exits, i64* entries,
                                               i64* states, const i64* first_marked, i64 r) {
    // Other blocks wrote land, exits and first_marked in this launch: read past L1 (__ldcg).
    const i64 end = offsets[r + 1], first = __ldcg(first_marked + r);
    i64 i = __ldcg(exits + first);  // its entry was right, so this exit is
    for (i64 c = first + 1; chunk_begin_of(c) < end; ++c) {
        GT_STEP();
        const i64 stop = min(chunk_begin_of(c) + NORMALIZE_CHUNK, n_bytes);
        entries[c] = i;
        if (stop >= end) break;  // the string's last chunk: it hands nothing on
        if (i == __ldcg(land + c - 1)) {  // the join started this chunk here: its exit and state hold
            i = __ldcg(exits + c);
            continue;
        }
        int state = NORMALIZE_KEEP;
        i = walk_state(steps, sources, targets, target_offsets, data, i, stop, collapse, &state);
        exits[c] = i;
        states[c] = state;
    }
}

// Returns (to every thread of the block) once tile `tile` has done its part and every earlier tile
// has: order[1 + t] is set when tile t and all before it have (thread 0 of each waits for the flag
// of the tile before, which started earlier and never waits on a later one).
__device__ __forceinline__ void after_earlier_tiles(u64* order, i64 tile) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        while (tile > 0 && atomicAdd(&order[tile], 0ull) == 0) __nanosleep(64);
        __threadfence();
        atomicExch(&order[1 + tile], 1ull);
    }
    __syncthreads();
}

// Lands, joins and resolves in one launch: tiles of GT_BLOCK chunks in launch order (lookback_tile
// on order[0]); a tile joins once it and every tile before it have landed (order[1 + t]: every
// earlier chunk has landed and set its strings unmarked), and the thread of a marked string's last
// chunk resolves it once every tile up to its own has joined (order[1 + gridDim.x + t]). `order`
// (1 + 2 gridDim.x words) is zeroed by normalize_match.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_chunk_land_join(const int* __restrict__ steps, const int* __restrict__ sources,
                          const u8* __restrict__ targets, const i64* __restrict__ target_offsets,
                          const u8* __restrict__ data, const i64* __restrict__ offsets, i64 n_rows, i64 n_bytes,
                          i64 n_chunks, int collapse, u64* __restrict__ order, i64* __restrict__ land,
                          i64* __restrict__ exits, i64* __restrict__ entries, i64* __restrict__ states,
                          i64* __restrict__ first_marked) {
    __shared__ i64 tile_slot;
    const i64 tile = lookback_tile(order, &tile_slot);
    const i64 c = tile * GT_BLOCK + threadIdx.x;
    if (c < n_chunks) land_chunk(steps, offsets, n_rows, n_bytes, c, land, first_marked);
    after_earlier_tiles(order, tile);
    if (c < n_chunks)
        join_chunk(steps, sources, targets, target_offsets, data, offsets, n_rows, n_bytes, c, collapse, land, exits,
                   entries, states, first_marked);
    after_earlier_tiles(order + gridDim.x, tile);
    if (c >= n_chunks) return;
    const i64 begin = chunk_begin_of(c), r = string_of_byte(offsets, n_rows, begin);
    const bool ends_here = offsets[r] < begin && offsets[r + 1] <= min(begin + NORMALIZE_CHUNK, n_bytes);
    if (ends_here && __ldcg(first_marked + r) != NORMALIZE_NONE)
        resolve_string(steps, sources, targets, target_offsets, data, offsets, n_bytes, collapse, land, exits, entries,
                       states, first_marked, r);
}

// ---------------------------------------------------------------- trailing symbols
// When collapsing, a row's output loses its trailing space symbols. That is settled on the counts,
// before the scan, so that the rows come out packed: a step's emitted bytes, read backwards, are
// whole copies of the symbol and then a rest. row_last[r] is the last step of row r with a rest
// (atomicMax in the emit); the steps after it emit nothing, it keeps only its rest, and a row with
// no such step loses its dummy prefix too. This equals stripping the written row, except when the
// last rest is shorter than the symbol and ends like it (a copy could then straddle two steps,
// which needs a symbol or charsmap targets that are not whole characters): the call is flagged and
// the written rows are trimmed again by normalize_trim.
#define TRAIL_REST 0      // the output has bytes before its trailing copies of the symbol
#define TRAIL_ALL 1       // the output is only copies of the symbol
#define TRAIL_STRADDLE 2  // the rest is shorter than the symbol and ends like it

// What the emitted output of step o from target position a ends with; *whole gets the number of
// whole trailing copies of the symbol. Per thread: the step's output bytes.
__device__ __forceinline__ int trailing_symbols(const StepOutput& o, i64 a, const u8* targets, const u8* data,
                                                const u8* symbol, int symbol_length, i64* whole) {
    i64 matched = 0;
    int k = 0;  // bytes of the current copy matched, from its end
    for (i64 p = o.end - 1; p >= a; --p) {
        const u8 b = o.at(p, targets, data);
        for (int q = b == SPACE_BYTE ? symbol_length - 1 : 0; q >= 0; --q) {
            const u8 out = b == SPACE_BYTE ? symbol[q] : b;
            if (out != symbol[symbol_length - 1 - k]) { *whole = matched; return TRAIL_REST; }
            if (++k == symbol_length) { ++matched; k = 0; }
        }
    }
    *whole = matched;
    return k == 0 ? TRAIL_ALL : TRAIL_STRADDLE;
}

// The emitted size and the leading spaces dropped of the step at i (string r), given *prev_space;
// when collapsing, a step whose output is not only symbols raises row_last[r] to i.
__device__ __forceinline__ void emit_step(const int* steps, const int* sources, const u8* targets,
                                          const i64* target_offsets, const u8* data, i64 i, i64 r, i64 begin,
                                          const u8* symbol, int symbol_length, int collapse, int dummy,
                                          bool* prev_space, i64* counts, int* drops, i64* row_last) {
    const StepOutput o(sources[i], i, steps[i], target_offsets);
    // The dummy prefix goes before any string with a step other than one space (when collapsing;
    // else before any non-empty string); threads of one string may all write it.
    if (dummy && (!collapse || o.end - o.begin != 1 || o.at(o.begin, targets, data) != SPACE_BYTE))
        counts[begin + r] = symbol_length;
    i64 a = o.begin;
    if (*prev_space) while (a < o.end && o.at(a, targets, data) == SPACE_BYTE) ++a;
    if (a == o.end) return;
    i64 emitted = 0;
    for (i64 p = a; p < o.end; ++p) emitted += o.at(p, targets, data) == SPACE_BYTE ? symbol_length : 1;
    counts[i + r + 1] = emitted;
    drops[i] = (int)(a - o.begin);
    *prev_space = collapse && o.at(o.end - 1, targets, data) == SPACE_BYTE;
    i64 whole;
    if (collapse && trailing_symbols(o, a, targets, data, symbol, symbol_length, &whole) != TRAIL_ALL)
        atomicMax(&row_last[r], i);
}

// The space state code entering tile `tile` of normalize_chunk_emit (0: no earlier chunk set a
// state, else 1 + the state of the last one that did), by a decoupled look-back over the tiles'
// status words, whose value is such a code: a tile's own (its last setting chunk's) as soon as it
// has it, the code leaving it once known (INCLUSIVE). The nearest earlier tile whose word decides
// (INCLUSIVE, or a chunk of it set a state) gives it, 32 tiles at a time (the lanes of warp 0; every
// lane gets it). Publishes the code leaving the tile (`own`, else the one entering it).
__device__ __forceinline__ i64 entering_code(u64* status, i64 tile, i64 own) {
    const int lane = (int)(threadIdx.x & 31u);
    i64 code = 0;
    for (i64 top = tile - 1; top >= 0; top -= 32) {
        GT_STEP();
        const i64 j = top - lane;
        u64 word = GT_LOOKBACK_INCLUSIVE;  // before tile 0: nothing set, decided
        if (j >= 0) {
            while (((word = atomicAdd(&status[1 + j], 0ull)) >> 62) == 0) __nanosleep(64);
        }
        const unsigned decided = __ballot_sync(0xffffffffu, (word >> 62) == 2 || (word & GT_LOOKBACK_VALUE) != 0);
        if (!decided) continue;
        const int nearest = __ffs((int)decided) - 1;
        code = __shfl_sync(0xffffffffu, (i64)(word & GT_LOOKBACK_VALUE), nearest);
        break;
    }
    if (lane == 0 && tile > 0) atomicExch(&status[1 + tile], GT_LOOKBACK_INCLUSIVE | (u64)(own ? own : code));
    return code;
}

// Whether the space state entering chunk c (tile c / GT_BLOCK of normalize_chunk_emit) is "a
// space": that of the last chunk before it that set one (states[j] != NORMALIZE_KEEP; a continued
// string's first chunk always does), found in the tile by a running maximum, else from the code
// entering the tile (entering_code). Call from every thread of the block (it synchronises it).
// Not inlined: inlined, the emission loop after it spilled 24 bytes on sm_90 (none this way).
__device__ __noinline__ bool chunk_space_entering(const i64* states, u64* status, i64 n_chunks, i64 c) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 last_set, entering;
    const i64 tile = c / GT_BLOCK, first = tile * GT_BLOCK;
    const bool sets = c < n_chunks && states[c] != NORMALIZE_KEEP;
    const i64 set_before = block_exclusive_max(sets ? (i64)threadIdx.x : -1, -1, scratch);
    if (threadIdx.x == GT_BLOCK - 1) last_set = sets ? (i64)threadIdx.x : set_before;
    __syncthreads();
    if (threadIdx.x < 32) {
        const i64 own = last_set < 0 ? 0 : 1 + states[first + last_set];
        if (threadIdx.x == 0) lookback_publish_aggregate(status, tile, own);
        const i64 code = entering_code(status, tile, own);
        if (threadIdx.x == 0) entering = code;
    }
    __syncthreads();
    return set_before >= 0 ? states[first + set_before] == 1 : entering == 2;
}

// A thread per chunk, tiles in launch order (status: 1 + gridDim.x words zeroed by normalize_match):
// walks the true positions of every string piece in the chunk, a continued string's piece from the
// space state entering the chunk (chunk_space_entering).
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_chunk_emit(const int* __restrict__ steps, const int* __restrict__ sources, const u8* __restrict__ targets,
                     const i64* __restrict__ target_offsets, const u8* __restrict__ data,
                     const i64* __restrict__ offsets, i64 n_rows, i64 n_bytes, i64 n_chunks,
                     const u8* __restrict__ symbol, int symbol_length, int collapse, int dummy,
                     const i64* __restrict__ entries, const i64* __restrict__ states, u64* __restrict__ status,
                     i64* __restrict__ counts, int* __restrict__ drops, i64* __restrict__ row_last) {
    __shared__ i64 tile_slot;
    const i64 c = lookback_tile(status, &tile_slot) * GT_BLOCK + threadIdx.x;
    const bool space_entering = chunk_space_entering(states, status, n_chunks, c);
    if (c >= n_chunks) return;
    const i64 begin = chunk_begin_of(c), stop = min(begin + NORMALIZE_CHUNK, n_bytes);
    for (i64 at = begin; at < stop;) {
        const i64 r = string_of_byte(offsets, n_rows, at), row_begin = offsets[r], row_end = offsets[r + 1];
        const bool continued = row_begin < begin;
        bool prev_space = continued ? space_entering : collapse != 0;
        for (i64 i = continued ? entries[c] : row_begin; i < min(row_end, stop); i += steps[i]) {
            GT_STEP();
            emit_step(steps, sources, targets, target_offsets, data, i, r, row_begin, symbol, symbol_length, collapse,
                      dummy, &prev_space, counts, drops, row_last);
        }
        at = row_end;
    }
}

// The row of slot s: the last r with offsets[r] + r <= s (those starts ascend strictly).
__device__ __forceinline__ i64 row_of_slot(const i64* offsets, i64 n_rows, i64 s) {
    i64 lo = 0, hi = n_rows;  // answer in [lo, hi)
    while (hi - lo > 1) {
        const i64 mid = lo + (hi - lo) / 2;
        if (offsets[mid] + mid <= s) lo = mid; else hi = mid;
    }
    return lo;
}

// Slot s's count once trimmed (when collapsing): the counts of row r's steps after row_last[r]
// dropped, the trailing copies of the symbol of the step at row_last[r] taken off (*straddle = 1
// when its rest may end a copy that began in an earlier step), the dummy prefix of a row with
// nothing left dropped.
__device__ __forceinline__ i64 trimmed_count(const int* steps, const int* sources, const u8* targets,
                                             const i64* target_offsets, const u8* data, const i64* offsets,
                                             i64 n_rows, i64 s, const u8* symbol, int symbol_length, const int* drops,
                                             const i64* row_last, const i64* counts, i64* straddle) {
    const i64 r = row_of_slot(offsets, n_rows, s), last = row_last[r], t = s - r - 1;
    if (s == offsets[r] + r) return last < 0 ? 0 : counts[s];  // the dummy prefix
    if (counts[s] == 0 || t < last) return counts[s];
    if (t > last) return 0;
    const StepOutput o(sources[t], t, steps[t], target_offsets);
    i64 whole;
    if (trailing_symbols(o, o.begin + drops[t], targets, data, symbol, symbol_length, &whole) == TRAIL_STRADDLE)
        *straddle = 1;
    return counts[s] - whole * symbol_length;
}

// A thread per slot s < n_slots (tiles in launch order): its count, trimmed when collapsing, and
// slot_offsets[s + 1], the inclusive sum of the counts by a decoupled look-back scan (status: 1 +
// gridDim.x words zeroed by normalize_match, as is the straddle flag slot_offsets[n_slots + 1], which
// the host reads with the total). Thread 0 writes slot_offsets[0].
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_slots(const int* __restrict__ steps, const int* __restrict__ sources, const u8* __restrict__ targets,
                const i64* __restrict__ target_offsets, const u8* __restrict__ data,
                const i64* __restrict__ offsets, i64 n_rows, i64 n_bytes, const u8* __restrict__ symbol,
                int symbol_length, int collapse, const int* __restrict__ drops, const i64* __restrict__ row_last,
                i64* __restrict__ counts, u64* __restrict__ status, i64* __restrict__ slot_offsets) {
    __shared__ i64 scratch[GT_WARPS];
    __shared__ i64 tile_slot, prior;
    const i64 tile = lookback_tile(status, &tile_slot);
    const i64 s = tile * GT_BLOCK + threadIdx.x, n_slots = n_bytes + n_rows;
    i64 count = 0;
    if (s < n_slots) {
        count = collapse ? trimmed_count(steps, sources, targets, target_offsets, data, offsets, n_rows, s, symbol,
                                         symbol_length, drops, row_last, counts, slot_offsets + n_slots + 1)
                         : counts[s];
        counts[s] = count;
    }
    i64 total;
    const i64 before = lookback_prefix(count, status, tile, scratch, &prior, &total);
    if (s < n_slots) slot_offsets[s + 1] = before + count;
    if (s == 0) slot_offsets[0] = 0;
}

// Writes the counts[slot] bytes the step at t emits (fewer than its output when trimmed). Packed:
// `align` is the final alignment (byte at + r of row r) and threads r <= n_rows also write the row
// offsets and end entries; else `align` runs parallel to `out` and the host packs the rows.
extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_write(const int* __restrict__ steps, const int* __restrict__ sources, const u8* __restrict__ targets,
                const i64* __restrict__ target_offsets, const u8* __restrict__ data, const i64* __restrict__ offsets,
                i64 n_rows, i64 n_bytes, const u8* __restrict__ symbol, int symbol_length,
                const i64* __restrict__ counts, const i64* __restrict__ slot_offsets, const int* __restrict__ drops,
                int packed, int aligned, u8* __restrict__ out, i64* __restrict__ align,
                i64* __restrict__ new_offsets) {
    const i64 t = global_thread_index();
    if (packed && t <= n_rows) {
        const i64 row_start = slot_offsets[offsets[t] + t];
        new_offsets[t] = row_start;
        if (aligned && t > 0) align[row_start + t - 1] = offsets[t] - offsets[t - 1];
    }
    if (t >= n_bytes) return;
    const i64 r = string_of_byte(offsets, n_rows, t), begin = offsets[r];
    const i64 shift = packed ? r : 0;  // where the alignment of output byte `at` goes
    if (t == begin && counts[begin + r] > 0) {  // the dummy prefix
        const i64 at = slot_offsets[begin + r];
        for (int k = 0; k < symbol_length; ++k) {
            out[at + k] = symbol[k];
            if (aligned) align[at + k + shift] = 0;
        }
    }
    const i64 slot = t + r + 1;
    if (counts[slot] == 0) return;
    const StepOutput o(sources[t], t, steps[t], target_offsets);
    i64 at = slot_offsets[slot];
    const i64 stop = at + counts[slot];
    for (i64 p = o.begin + drops[t]; p < o.end && at < stop; ++p) {
        const u8 b = o.at(p, targets, data);
        const int n = b == SPACE_BYTE ? symbol_length : 1;
        for (int k = 0; k < n && at < stop; ++k, ++at) {
            out[at] = b == SPACE_BYTE ? symbol[k] : b;
            if (aligned) align[at + shift] = t - begin;
        }
    }
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_trim(const u8* __restrict__ out, const i64* __restrict__ slot_offsets, const i64* __restrict__ offsets,
               i64 n_rows, const u8* __restrict__ symbol, int symbol_length, int collapse,
               i64* __restrict__ lengths) {
    const i64 r = global_thread_index();
    if (r >= n_rows) return;
    const i64 start = slot_offsets[offsets[r] + r];
    i64 n = slot_offsets[offsets[r + 1] + r + 1] - start;
    while (collapse && n >= symbol_length) {
        bool same = true;
        for (int k = 0; k < symbol_length && same; ++k) same = out[start + n - symbol_length + k] == symbol[k];
        if (!same) break;
        n -= symbol_length;
    }
    lengths[r] = n;
}
