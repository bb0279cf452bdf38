"""word2vec.c's Huffman tree for hierarchical softmax: every word's code and the inner nodes on its path.

``CreateBinaryTree`` of word2vec.c, on counts sorted in descending order: two queues (the leaves
from the rarest up, the inner nodes in creation order), the smaller count taken first, a tie going
to the inner node; the second node taken gets bit 1. Inner node ``k`` (the ``k``-th made) is row
``k`` of ``syn1``; the root is row ``V - 2``. Codes and points are stored flat (ragged, root first),
which is what the kernels read.

gensim builds the tree with a heap, which breaks ties between equal counts the other way; on
counts without ties (as most real vocabularies' low ranks are not) both give the same tree.

>>> tree = huffman_tree(np.array([5, 3, 2, 1]))
>>> [tree.code(w) for w in range(4)], [tree.point(w) for w in range(4)]
([[0], [1, 1], [1, 0, 1], [1, 0, 0]], [[2], [2, 1], [2, 1, 0], [2, 1, 0]])
"""
from __future__ import annotations

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


def huffman_tree(counts: np.ndarray) -> HuffmanTree:
    """The tree of word2vec.c for ``counts`` (descending, as the vocabulary is sorted).

    A one-word vocabulary gets an empty code (word2vec.c would build a tree of one leaf and
    never train it either).

    >>> huffman_tree(np.array([7])).offsets.tolist()
    [0, 0]
    """
    counts = np.asarray(counts, np.int64)
    n = counts.size
    if n and bool((counts[1:] > counts[:-1]).any()):
        raise ValueError("counts must be sorted in descending order (the vocabulary's order)")
    if n < 2:
        return HuffmanTree(np.zeros(0, np.uint8), np.zeros(0, np.int32), np.zeros(n + 1, np.int64))
    weight = np.concatenate((counts, np.zeros(n - 1, np.int64)))
    parent = np.zeros(2 * n - 1, np.int64)
    binary = np.zeros(2 * n - 1, np.uint8)
    leaf, inner = n - 1, n  # next leaf (rarest first), next inner node
    for a in range(n - 1):
        pair = []
        for _ in range(2):
            # the leaf only when strictly lighter: word2vec.c's `count[pos1] < count[pos2]`
            if leaf >= 0 and (inner >= n + a or weight[leaf] < weight[inner]):
                pair.append(leaf)
                leaf -= 1
            else:
                pair.append(inner)
                inner += 1
        weight[n + a] = weight[pair[0]] + weight[pair[1]]
        parent[pair[0]] = parent[pair[1]] = n + a
        binary[pair[1]] = 1
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
