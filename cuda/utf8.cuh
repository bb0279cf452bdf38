// utf8.cuh -- UTF-8 rules shared by the UTF-8 kernels and by later kernel families.
//
// The seed (Ustr) rule: a well-formed sequence (Unicode Table 3-7: no overlongs, no surrogates,
// nothing above U+10FFFF) decodes to its codepoint; anything else decodes to U+FFFD and consumes
// exactly one byte. Sequences never cross a string boundary.
#pragma once
#include "common.cuh"

#define GT_REPLACEMENT 0xFFFDu

__device__ __forceinline__ bool utf8_is_continuation(u8 b) { return (b & 0xC0u) == 0x80u; }

// Length (1-4) of the well-formed sequence starting at s[0], with s[0..limit) readable, or 0 if
// the bytes there are not well-formed. *cp receives the codepoint (U+FFFD when 0 is returned).
__device__ __forceinline__ int utf8_sequence_at(const u8* s, i64 limit, u32* cp) {
    const u32 b0 = s[0];
    *cp = GT_REPLACEMENT;
    if (b0 < 0x80u) { *cp = b0; return 1; }
    int len;
    u32 lo = 0x80u, hi = 0xBFu;  // allowed range of the second byte
    if (b0 >= 0xC2u && b0 <= 0xDFu) len = 2;
    else if (b0 >= 0xE0u && b0 <= 0xEFu) { len = 3; if (b0 == 0xE0u) lo = 0xA0u; else if (b0 == 0xEDu) hi = 0x9Fu; }
    else if (b0 >= 0xF0u && b0 <= 0xF4u) { len = 4; if (b0 == 0xF0u) lo = 0x90u; else if (b0 == 0xF4u) hi = 0x8Fu; }
    else return 0;
    if (limit < len) return 0;
    const u32 b1 = s[1];
    if (b1 < lo || b1 > hi) return 0;
    u32 value = b1 & 0x3Fu;
    for (int k = 2; k < len; ++k) {
        const u32 b = s[k];
        if (!utf8_is_continuation((u8)b)) return 0;
        value = (value << 6) | (b & 0x3Fu);
    }
    const u32 lead_bits = len == 2 ? (b0 & 0x1Fu) : (len == 3 ? (b0 & 0x0Fu) : (b0 & 0x07u));
    *cp = (lead_bits << (6 * (len - 1))) | value;
    return len;
}

// Does byte i (inside the string [begin, end)) start a character? Lead and ASCII bytes always
// do; a continuation byte does only when no well-formed sequence starting at most 3 bytes
// earlier in the same string covers it (then it decodes alone, to U+FFFD).
__device__ __forceinline__ bool utf8_starts_char(const u8* data, i64 i, i64 begin, i64 end) {
    if (!utf8_is_continuation(data[i])) return true;
    const i64 stop = i - 3 > begin ? i - 3 : begin;
    for (i64 p = i - 1; p >= stop; --p) {
        if (!utf8_is_continuation(data[p])) {
            u32 cp;
            const int len = utf8_sequence_at(data + p, end - p, &cp);
            return p + len <= i;
        }
    }
    return true;
}

// Bytes needed to encode `cp`; invalid codepoints (surrogates, > U+10FFFF) encode as U+FFFD.
__device__ __forceinline__ int utf8_encoded_length(u32 cp) {
    if (cp < 0x80u) return 1;
    if (cp < 0x800u) return 2;
    if (cp < 0x10000u) return 3;  // surrogates become U+FFFD, also 3 bytes
    return cp <= 0x10FFFFu ? 4 : 3;
}

__device__ __forceinline__ void utf8_write(u32 cp, u8* out) {
    if ((cp >= 0xD800u && cp <= 0xDFFFu) || cp > 0x10FFFFu) cp = GT_REPLACEMENT;
    if (cp < 0x80u) { out[0] = (u8)cp; return; }
    if (cp < 0x800u) { out[0] = (u8)(0xC0u | (cp >> 6)); out[1] = (u8)(0x80u | (cp & 0x3Fu)); return; }
    if (cp < 0x10000u) {
        out[0] = (u8)(0xE0u | (cp >> 12)); out[1] = (u8)(0x80u | ((cp >> 6) & 0x3Fu));
        out[2] = (u8)(0x80u | (cp & 0x3Fu)); return;
    }
    out[0] = (u8)(0xF0u | (cp >> 18)); out[1] = (u8)(0x80u | ((cp >> 12) & 0x3Fu));
    out[2] = (u8)(0x80u | ((cp >> 6) & 0x3Fu)); out[3] = (u8)(0x80u | (cp & 0x3Fu));
}

// Character classes of PieceTokenizer's pre-tokenizer (custom ranges, not Unicode categories).
// Keep the numbering in sync with gpu_text.utf8.CharClass.
#define GT_CLASS_OTHER 0  // punctuation, symbols, controls, unassigned, invalid
#define GT_CLASS_SPACE 1
#define GT_CLASS_DIGIT 2
#define GT_CLASS_ALPHA 3
#define GT_CLASS_HAN 4

__device__ __forceinline__ bool char_is_han(u32 c) {
    return (c >= 0x3400u && c <= 0x4DBFu) || (c >= 0x4E00u && c <= 0x9FFFu) ||
           (c >= 0xF900u && c <= 0xFAFFu) || (c >= 0x20000u && c <= 0x323AFu);
}

__device__ __forceinline__ bool char_is_digit(u32 c) {
    return (c >= 0x30u && c <= 0x39u) || (c >= 0xFF10u && c <= 0xFF19u);
}

// The seed's "word character" ranges (read off PieceTokenizer; see gpu_text/utf8.py).
__device__ __forceinline__ bool char_is_word(u32 c) {
    if (c < 0x80u) return (c >= 0x41u && c <= 0x5Au) || (c >= 0x61u && c <= 0x7Au);
    return (c >= 0xC0u && c <= 0xD6u) || (c >= 0xD8u && c <= 0xF6u) || (c >= 0xF8u && c <= 0x85Fu) ||
           (c >= 0x900u && c <= 0x1FFFu) || (c >= 0x2E80u && c <= 0x2FFFu) || (c >= 0x3040u && c <= 0x33FFu) ||
           (c >= 0x4DC0u && c <= 0x4DFFu) || (c >= 0xA000u && c <= 0xD7FFu) || (c >= 0xFB00u && c <= 0xFDFFu) ||
           (c >= 0xFE70u && c <= 0xFEFFu) || (c >= 0xFF21u && c <= 0xFF3Au) || (c >= 0xFF41u && c <= 0xFF5Au) ||
           (c >= 0xFF66u && c <= 0xFFDCu) || (c >= 0x10000u && c <= 0x10FFFu);
}

// Unicode White_Space (stable since Unicode 6.0).
__device__ __forceinline__ bool char_is_space(u32 c) {
    return (c >= 0x09u && c <= 0x0Du) || c == 0x20u || c == 0x85u || c == 0xA0u || c == 0x1680u ||
           (c >= 0x2000u && c <= 0x200Au) || c == 0x2028u || c == 0x2029u || c == 0x202Fu ||
           c == 0x205Fu || c == 0x3000u;
}

__device__ __forceinline__ u8 char_class_of(u32 c) {
    if (char_is_han(c)) return GT_CLASS_HAN;
    if (char_is_digit(c)) return GT_CLASS_DIGIT;
    if (char_is_word(c)) return GT_CLASS_ALPHA;
    if (char_is_space(c)) return GT_CLASS_SPACE;
    return GT_CLASS_OTHER;
}
