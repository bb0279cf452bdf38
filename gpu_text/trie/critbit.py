"""A dynamic dictionary as a critbit trie (the seed's Trie library: Critbit), in plain Python.

Words are byte strings compared bit by bit, most significant bit of each byte first, with the
bytes past a word's end read as 0 (the Trie library's *logical zero padding*; this is why words may not
contain NUL). An internal node keeps only a *critical bit*: the first bit, as ``(byte index, bit)``,
where the words below it differ; bit 0 goes to ``child[0]``. Inserting a word adds one internal
node and one leaf, placed on the path where its critical bit falls in that order, so the shape does
not depend on the insertion order and an in-order walk lists words in byte order.

Use it while a dictionary is still changing; freeze it into a
:class:`~gpu_text.trie.DoubleArrayTrie` for fast and batched queries.
"""
from __future__ import annotations

from collections.abc import Iterator

from gpu_text.trie.double_array import as_word


class _Leaf:
    __slots__ = ("key", "value")

    def __init__(self, key: bytes, value: int) -> None:
        self.key = key
        self.value = value


class _Node:
    __slots__ = ("byte", "mask", "child")

    def __init__(self, byte: int, mask: int, child: list[_Node | _Leaf]) -> None:
        self.byte = byte  # index of the critical byte
        self.mask = mask  # the critical bit within it, as a one-bit mask
        self.child = child

    def direction(self, key: bytes) -> int:
        return 1 if self.byte < len(key) and key[self.byte] & self.mask else 0

    def comes_after(self, byte: int, mask: int) -> bool:
        """Whether this node's critical bit comes later in a key than ``(byte, mask)``."""
        return self.byte > byte or (self.byte == byte and self.mask < mask)


def _leftmost(node: _Node | _Leaf) -> _Leaf:
    while isinstance(node, _Node):
        node = node.child[0]
    return node


class CritbitTrie:
    """A dictionary of byte-string words (``str`` is UTF-8 encoded) with int values that grows
    one word at a time.

    >>> t = CritbitTrie()
    >>> [t.insert(w) for w in ["app", "apple", "application"]]
    [0, 1, 2]
    >>> t.values_with_prefix("app"), t.get("apple"), "ap" in t, len(t)
    ([0, 1, 2], 1, False, 3)
    """

    def __init__(self) -> None:
        self._root: _Node | _Leaf | None = None
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"CritbitTrie(words={self._size})"

    def __contains__(self, word: object) -> bool:
        """``word in trie``.

        >>> t = CritbitTrie(); _ = t.insert("a"); ("a" in t, b"a" in t, "b" in t, 1 in t)
        (True, True, False, False)
        """
        return isinstance(word, (str, bytes)) and self.get(word) is not None

    def _closest_leaf(self, key: bytes) -> _Leaf:
        node = self._root
        while isinstance(node, _Node):
            node = node.child[node.direction(key)]
        assert node is not None
        return node

    def insert(self, word: str | bytes, value: int | None = None) -> int:
        """Adds ``word`` with ``value`` (default: the number of words before it) and returns its value.

        A word already present keeps its value when ``value`` is ``None``, else takes ``value``.
        Empty words and words containing NUL are a ``ValueError``.

        >>> t = CritbitTrie()
        >>> t.insert("b"), t.insert("a"), t.insert("b"), t.insert("b", 7), t.get("b")
        (0, 1, 0, 7, 7)
        """
        key = as_word(word, "the word")
        if self._root is None:
            self._root = _Leaf(key, self._size if value is None else value)
            self._size = 1
            return self._root.value
        nearest = self._closest_leaf(key)
        other = nearest.key
        # The first differing byte (reading past either end as 0), then its highest differing bit.
        byte = next((i for i in range(max(len(key), len(other)))
                     if (key[i] if i < len(key) else 0) != (other[i] if i < len(other) else 0)), None)
        if byte is None:
            if value is not None:
                nearest.value = value
            return nearest.value
        ours = key[byte] if byte < len(key) else 0
        theirs = other[byte] if byte < len(other) else 0
        mask = 1 << ((ours ^ theirs).bit_length() - 1)
        leaf = _Leaf(key, self._size if value is None else value)
        # Walk down again until the critical bits pass the new one; the new node goes there.
        parent: _Node | None = None
        node = self._root
        while isinstance(node, _Node) and not node.comes_after(byte, mask):
            parent, node = node, node.child[node.direction(key)]
        split = _Node(byte, mask, [leaf, node] if not ours & mask else [node, leaf])
        if parent is None:
            self._root = split
        else:
            parent.child[parent.direction(key)] = split
        self._size += 1
        return leaf.value

    def get(self, word: str | bytes) -> int | None:
        """The value of ``word``, or ``None``.

        >>> t = CritbitTrie(); _ = t.insert("apple", 5); t.get("apple"), t.get("app")
        (5, None)
        """
        if self._root is None:
            return None
        key = as_word(word)
        leaf = self._closest_leaf(key)
        return leaf.value if leaf.key == key else None

    def _leaves(self, node: _Node | _Leaf) -> Iterator[_Leaf]:
        stack = [node]
        while stack:
            node = stack.pop()
            if isinstance(node, _Leaf):
                yield node
            else:
                stack.extend((node.child[1], node.child[0]))  # child 0 first: byte order

    def values_with_prefix(self, prefix: str | bytes) -> list[int]:
        """Values of every word starting with ``prefix`` (itself included), in byte order of the words.

        >>> t = CritbitTrie()
        >>> for w in ["apply", "app", "b", "apple"]: _ = t.insert(w)
        >>> t.values_with_prefix("app"), t.values_with_prefix("c")
        ([1, 3, 0], [])
        """
        if self._root is None:
            return []
        key = as_word(prefix)
        node = self._root
        # Critical bits inside the prefix decide the way; below the first one past it, every word
        # shares the prefix or none does.
        while isinstance(node, _Node) and node.byte < len(key):
            node = node.child[node.direction(key)]
        if not _leftmost(node).key.startswith(key):
            return []
        return [leaf.value for leaf in self._leaves(node)]

    def common_prefix_values(self, text: str | bytes) -> list[int]:
        """Values of every word that is a prefix of ``text``, longest first.

        A word ``w`` that is a prefix of ``text`` follows ``text``'s path until the first node
        where ``text`` goes right while ``w`` (zero there, past its end) goes left, and then keeps
        left: it is the leftmost leaf under one of those left turns, or the leaf ``text`` reaches.

        >>> t = CritbitTrie()
        >>> for w in ["a", "app", "apple", "b"]: _ = t.insert(w)
        >>> t.common_prefix_values("applejack")
        [2, 1, 0]
        """
        if self._root is None:
            return []
        key = as_word(text)
        candidates = []
        node = self._root
        while isinstance(node, _Node):
            way = node.direction(key)
            if way == 1:
                candidates.append(_leftmost(node.child[0]))
            node = node.child[way]
        candidates.append(node)
        found = {leaf.key: leaf.value for leaf in candidates if key.startswith(leaf.key)}
        return [found[k] for k in sorted(found, key=len, reverse=True)]
