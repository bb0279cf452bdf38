// merge_tables.cuh -- lookups in the hash tables of gpu_text/tokenizer/merge_tables.py.
//
// A table is keys (u64, EMPTY where free) and int values, a power of two in size, open addressing
// with linear probing from SplitMix64's finalizer of the key. Keys: a character's bytes packed
// big-endian into the low 32 bits; a pair of symbol ids as left << 32 | right.
#pragma once
#include "common.cuh"

#define GT_TABLE_EMPTY 0xFFFFFFFFFFFFFFFFull

struct HashTable {
    const u64* keys;
    const int* values;  // null for a set: a found key gives 0
    i64 size;
};

// The value stored under `key`, or -1.
__device__ __forceinline__ int table_lookup(const HashTable& table, u64 key) {
    u64 x = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    i64 slot = (i64)((x ^ (x >> 31)) & (u64)(table.size - 1));
    for (;;) {
        const u64 found = table.keys[slot];
        if (found == key) return table.values ? table.values[slot] : 0;
        if (found == GT_TABLE_EMPTY) return -1;
        slot = (slot + 1) & (table.size - 1);
    }
}

__device__ __forceinline__ u64 pair_key(int left, int right) {
    return ((u64)(u32)left << 32) | (u64)(u32)right;
}

// The packed key of the character data[0, width).
__device__ __forceinline__ u64 char_key(const u8* data, int width) {
    u64 key = 0;
    for (int k = 0; k < width; ++k) key |= (u64)data[k] << (24 - 8 * k);
    return key;
}
