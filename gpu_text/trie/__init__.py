"""Dictionaries as tries: the static double-array trie and the dynamic critbit trie.

:class:`DoubleArrayTrie` holds a fixed word list (built once in Numba, saved and memory-mapped as
``.npz``) and answers exact, prefix and predictive queries, one string at a time on the CPU or
whole batches on any backend; the segmenter builds its word lattice from
:meth:`DoubleArrayTrie.prefix_search_spans`, and Numba code walks the arrays itself with
:func:`trie_step`, :func:`trie_value` and :func:`walk_prefixes` (CUDA code with ``trie_step`` and
``trie_value`` of ``cuda/double_array.cuh``). :class:`CritbitTrie` is a pure Python dictionary
that grows one word at a time.

>>> from gpu_text.trie import DoubleArrayTrie
>>> DoubleArrayTrie.build(["he", "she", "his"]).common_prefixes("she said")
[(3, 1)]
"""
from __future__ import annotations

from gpu_text.trie.critbit import CritbitTrie
from gpu_text.trie.double_array import DoubleArrayTrie, PrefixMatches, trie_step, trie_value, walk_prefixes

__all__ = ["CritbitTrie", "DoubleArrayTrie", "PrefixMatches", "trie_step", "trie_value", "walk_prefixes"]
