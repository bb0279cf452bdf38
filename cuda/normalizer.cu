// normalizer.cu -- SentencePiece normalization: charsmap by longest match, then space handling.
//
// Four passes (the rules are in gpu_text/tokenizer/normalizer.py):
//   normalize_match  one thread per byte: the step that would start there (longest charsmap
//                    match, else one character, else one malformed byte -> U+FFFD). All the trie
//                    walks happen here, in parallel.
//   normalize_walk   one thread per string: follows the steps from the string's start (a match
//                    starts where the previous one ended, which no thread can know locally) and
//                    decides per step how many leading spaces to drop and how many bytes it emits.
//                    It only reads the short step outputs, so it is cheap next to the trie walks.
//   normalize_write  one thread per byte: writes the emitted bytes of the step starting there at
//                    its place from the host's exclusive scan of the counts.
//   normalize_trim   one thread per string: strips trailing space symbols; the host packs rows.
// Counts live in "slots": slot offsets[r] + r is string r's dummy prefix, slot i + r + 1 is byte i
// of string r, so one scan over the slots places everything, dummy prefixes included.
#include "double_array.cuh"
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
                int* __restrict__ sources) {
    const i64 t = global_thread_index();
    if (t >= n_bytes) return;
    const i64 end = offsets[string_of_byte(offsets, n_rows, t) + 1];
    int pos = 0, length = 0, source = -1;
    for (i64 i = t; i < end; ++i) {
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

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_walk(const int* __restrict__ steps, const int* __restrict__ sources, const u8* __restrict__ targets,
               const i64* __restrict__ target_offsets, const u8* __restrict__ data, const i64* __restrict__ offsets,
               i64 n_rows, int symbol_length, int collapse, int dummy, i64* __restrict__ counts,
               int* __restrict__ drops) {
    const i64 r = global_thread_index();
    if (r >= n_rows) return;
    const i64 begin = offsets[r], end = offsets[r + 1];
    i64 i = begin;
    if (collapse) {  // steps that give exactly one space are skipped at the start
        while (i < end) {
            const StepOutput o(sources[i], i, steps[i], target_offsets);
            if (o.end - o.begin != 1 || o.at(o.begin, targets, data) != SPACE_BYTE) break;
            i += steps[i];
        }
    }
    if (i == end) return;
    if (dummy) counts[begin + r] = symbol_length;
    bool prev_space = collapse != 0;
    for (; i < end; i += steps[i]) {
        const StepOutput o(sources[i], i, steps[i], target_offsets);
        i64 a = o.begin;
        if (prev_space) while (a < o.end && o.at(a, targets, data) == SPACE_BYTE) ++a;
        if (a == o.end) continue;
        i64 emitted = 0;
        for (i64 p = a; p < o.end; ++p) emitted += o.at(p, targets, data) == SPACE_BYTE ? symbol_length : 1;
        counts[i + r + 1] = emitted;
        drops[i] = (int)(a - o.begin);
        prev_space = collapse && o.at(o.end - 1, targets, data) == SPACE_BYTE;
    }
}

extern "C" __global__ void __launch_bounds__(GT_BLOCK)
normalize_write(const int* __restrict__ steps, const int* __restrict__ sources, const u8* __restrict__ targets,
                const i64* __restrict__ target_offsets, const u8* __restrict__ data, const i64* __restrict__ offsets,
                i64 n_rows, i64 n_bytes, const u8* __restrict__ symbol, int symbol_length,
                const i64* __restrict__ counts, const i64* __restrict__ slot_offsets, const int* __restrict__ drops,
                u8* __restrict__ out, i64* __restrict__ align) {
    const i64 t = global_thread_index();
    if (t >= n_bytes) return;
    const i64 r = string_of_byte(offsets, n_rows, t), begin = offsets[r];
    if (t == begin && counts[begin + r] > 0) {  // the dummy prefix
        const i64 at = slot_offsets[begin + r];
        for (int k = 0; k < symbol_length; ++k) { out[at + k] = symbol[k]; align[at + k] = 0; }
    }
    const i64 slot = t + r + 1;
    if (counts[slot] == 0) return;
    const StepOutput o(sources[t], t, steps[t], target_offsets);
    i64 at = slot_offsets[slot];
    for (i64 p = o.begin + drops[t]; p < o.end; ++p) {
        const u8 b = o.at(p, targets, data);
        if (b == SPACE_BYTE) {
            for (int k = 0; k < symbol_length; ++k) { out[at] = symbol[k]; align[at] = t - begin; ++at; }
        } else {
            out[at] = b;
            align[at] = t - begin;
            ++at;
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
