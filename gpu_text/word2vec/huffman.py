"""word2vec.c's Huffman tree for hierarchical softmax: every word's code and the inner nodes on its path.

``CreateBinaryTree`` of word2vec.c, on counts sorted in descending order: two queues (the leaves
from the rarest up, the inner nodes in creation order), the smaller count taken first, a tie going
to the inner node; the second node taken gets bit 1. Inner node ``k`` (the ``k``-th made) is row
``k`` of ``syn1``; the root is row ``V - 2``. Codes and points are stored flat (ragged, root first),
which is what the kernels read.

gensim builds the tree with a heap ordered by count alone, so heapq's internal layout breaks its
ties; ``ties="gensim"`` replays that heap to give gensim's tree exactly. On counts without ties
both trees are one; on a real vocabulary, whose rare words share counts, they differ, and so do
the vectors: on 1.6M words of Gutenberg + KJV (CBOW-HS, 3 seeds) gensim's tie order gave WS-353
0.240 / SimLex 0.109 where word2vec.c's gave 0.284 / 0.121, all else equal.

>>> tree = huffman_tree(np.array([5, 3, 2, 1]))
>>> [tree.code(w) for w in range(4)], [tree.point(w) for w in range(4)]
([[0], [1, 1], [1, 0, 1], [1, 0, 0]], [[2], [2, 1], [2, 1, 0], [2, 1, 0]])
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np


@dataclass
class HuffmanTree:
    """Codes (uint8 bits) and points (int32 inner-node rows) of every word, root first:
    word ``w``'s are ``codes[offsets[w]:offsets[w + 1]]`` and the same slice of ``points``."""

    codes: np.ndarray
    points: np.ndarray
    offsets: np.ndarray

    def code(self, word: int) -> list[int]:
        """The bits of ``word``'s path from the root."""
        return self.codes[self.offsets[word]:self.offsets[word + 1]].tolist()

    def point(self, word: int) -> list[int]:
        """The inner nodes (rows of ``syn1``) on ``word``'s path from the root."""
        return self.points[self.offsets[word]:self.offsets[word + 1]].tolist()

    @property
    def max_depth(self) -> int:
        """The longest code.

        >>> huffman_tree(np.array([4, 2, 1, 1])).max_depth
        3
        """
        return int(np.diff(self.offsets).max()) if self.offsets.size > 1 else 0


TIES = ("word2vec", "gensim")


def _word2vec_merges(counts: np.ndarray) -> np.ndarray:
    """The two nodes merged into each inner node, in merge order: word2vec.c's two queues."""
    n = counts.size
    weight = np.concatenate((counts, np.zeros(n - 1, np.int64)))
    merges = np.empty((n - 1, 2), np.int64)
    leaf, inner = n - 1, n  # next leaf (rarest first), next inner node
    for a in range(n - 1):
        for side in range(2):
            # the leaf only when strictly lighter: word2vec.c's `count[pos1] < count[pos2]`
            if leaf >= 0 and (inner >= n + a or weight[leaf] < weight[inner]):
                merges[a, side] = leaf
                leaf -= 1
            else:
                merges[a, side] = inner
                inner += 1
        weight[n + a] = weight[merges[a, 0]] + weight[merges[a, 1]]
    return merges


class _HeapNode:
    """gensim's ``Heapitem`` ordering: by count alone, so equal counts leave the heap in whatever
    order heapq's sift-up and sift-down put them, which only heapq itself reproduces."""

    __slots__ = ("count", "index")

    def __init__(self, count: int, index: int) -> None:
        self.count, self.index = count, index

    def __lt__(self, other: "_HeapNode") -> bool:
        return self.count < other.count


def _gensim_merges(counts: np.ndarray) -> np.ndarray:
    """The merges of gensim's ``_build_heap`` (heapq over count-ordered items)."""
    n = counts.size
    heap = [_HeapNode(int(c), i) for i, c in enumerate(counts)]
    heapq.heapify(heap)
    merges = np.empty((n - 1, 2), np.int64)
    for a in range(n - 1):
        first, second = heapq.heappop(heap), heapq.heappop(heap)
        merges[a] = first.index, second.index
        heapq.heappush(heap, _HeapNode(first.count + second.count, n + a))
    return merges


def huffman_tree(counts: np.ndarray, ties: str = "word2vec") -> HuffmanTree:
    """The tree of word2vec.c (``ties="word2vec"``) or of gensim 4.4 (``ties="gensim"``, the
    same codes and points as its ``_assign_binary_codes``) for ``counts`` (descending, as the
    vocabulary is sorted).

    A one-word vocabulary gets an empty code (word2vec.c would build a tree of one leaf and
    never train it either).

    >>> huffman_tree(np.array([7])).offsets.tolist()
    [0, 0]
    >>> huffman_tree(np.array([2, 1, 1]), ties="gensim").code(0), huffman_tree(np.array([2, 1, 1])).code(0)
    ([0], [1])
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")
    counts = np.asarray(counts, np.int64)
    n = counts.size
    if n and bool((counts[1:] > counts[:-1]).any()):
        raise ValueError("counts must be sorted in descending order (the vocabulary's order)")
    if n < 2:
        return HuffmanTree(np.zeros(0, np.uint8), np.zeros(0, np.int32), np.zeros(n + 1, np.int64))
    merges = _word2vec_merges(counts) if ties == "word2vec" else _gensim_merges(counts)
    parent = np.zeros(2 * n - 1, np.int64)
    binary = np.zeros(2 * n - 1, np.uint8)
    parent[merges[:, 0]] = parent[merges[:, 1]] = np.arange(n, 2 * n - 1)
    binary[merges[:, 1]] = 1  # the second node taken gets bit 1
    root = 2 * n - 2
    depth = np.zeros(2 * n - 1, np.int64)
    for node in range(root - 1, -1, -1):  # parents are made after their children
        depth[node] = depth[parent[node]] + 1
    offsets = np.concatenate(([0], np.cumsum(depth[:n]))).astype(np.int64)
    codes = np.empty(int(offsets[-1]), np.uint8)
    points = np.empty(int(offsets[-1]), np.int32)
    for word in range(n):
        node, k = word, int(offsets[word + 1])
        while node != root:
            k -= 1
            codes[k] = binary[node]
            points[k] = parent[node] - n
            node = parent[node]
    return HuffmanTree(codes, points, offsets)


__all__ = ["HuffmanTree", "huffman_tree"]
