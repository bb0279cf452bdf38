// double_array.cuh -- walking a double-array trie (gpu_text.trie.DoubleArrayTrie) on the device.
//
// The layout (the Trie library's XOR double array), one slot per array index, slot 0 the root:
//   state[p]  internal slot: p ^ base, where base ^ byte is the slot of the child on `byte`;
//             value slot: the word's value (>= 0)
//   check[p]  parent slot + 1 (0: free slot or the root, so it never validates as a child)
//   label[p]  the byte on the edge into p (0 for value slots)
//   eow[p]    1 when the path to p spells a whole word; its value slot is the child on byte 0
// The Numba twins of these helpers are trie_step / trie_value in gpu_text/trie/double_array.py.
#pragma once
#include "common.cuh"

// The slot reached from slot `pos` on `byte`, or -1 when the trie has no such edge. Byte 0 never
// steps: it is the edge to a value slot, not part of any word. `size` (the array length) bounds
// every read, so a corrupt file gives wrong answers, never a read outside the arrays.
__device__ __forceinline__ int trie_step(const int* __restrict__ state, const int* __restrict__ check,
                                         const u8* __restrict__ label, int size, int pos, u8 byte) {
    if (byte == 0) return -1;
    const unsigned next = (unsigned)pos ^ (unsigned)state[pos] ^ byte;
    // no label test: the only slot at base ^ byte whose parent is pos is the child on byte
    if (next >= (unsigned)size || check[next] != pos + 1) return -1;
    return (int)next;
}

// The value of the word ending at slot `pos`, or -1 when no word ends there.
__device__ __forceinline__ int trie_value(const int* __restrict__ state, const int* __restrict__ check,
                                          const u8* __restrict__ label, const u8* __restrict__ eow, int size,
                                          int pos) {
    if (!eow[pos]) return -1;
    const unsigned slot = (unsigned)pos ^ (unsigned)state[pos];  // base ^ 0: the child on byte 0
    if (slot >= (unsigned)size || check[slot] != pos + 1) return -1;
    return state[slot];
}
