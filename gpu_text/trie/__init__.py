"""Dictionaries as tries: the static double-array trie and the dynamic critbit trie.

:class:`DoubleArrayTrie` holds a fixed word list (built once in Numba, saved and memory-mapped as
``.npz``) and answers exact, prefix and predictive queries, one string at a time on the CPU or
whole batches on any backend; the segmenter builds its word lattice from
:meth:`DoubleArrayTrie.prefix_search_spans`, and kernels walk the arrays themselves (Numba code
with ``cpu_fallback/double_array.py``, CUDA code with ``cuda/double_array.cuh``). :class:`CritbitTrie` is a pure Python dictionary
that grows one word at a time.

>>> from gpu_text.trie import DoubleArrayTrie
>>> DoubleArrayTrie.build(["he", "she", "his"]).common_prefixes("she said")
[(3, 1)]
"""
from __future__ import annotations

from gpu_text.trie.critbit import CritbitTrie
from gpu_text.trie.double_array import DoubleArrayTrie, PrefixMatches

__all__ = ["CritbitTrie", "DoubleArrayTrie", "PrefixMatches"]
