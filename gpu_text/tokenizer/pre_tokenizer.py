"""The pre-tokenizer: cuts normalized text into pre-tokens that BPE never merges across.

It runs after the Normalizer, so spaces are already the space symbol ``▁`` (U+2581). Three axes,
as in the seed's PieceTokenizer, plus SentencePiece-compatible splits:

- ``split="word"``: ``[^AHN]?A+ | H+ | N+ | S?[^AHNS]+ | S``; ``split="isolate"``:
  ``A+('A+)* | H+ | N+ | [^AHN]``; ``split="whitespace"``: ``S[^S]* | [^S]+`` (a pre-token starts
  at every ``▁`` and nowhere else); ``split="none"``: the whole string is one pre-token (SentencePiece's
  BPE merges over the whole normalized text, which matters when pieces hold ``▁`` inside, as
  models trained with ``split_by_whitespace=false`` or ``treat_whitespace_as_suffix`` do). A, H, N are the seed's letter, Han and digit classes
  (:class:`gpu_text.utf8.CharClass`), S is the space symbol; tab and newline are punctuation.
- ``digits="split"`` turns a digit run into single characters.
- ``cn=None`` keeps Han runs whole, ``"char"`` cuts them per character, a dictionary (path or
  :class:`gpu_text.segment.Dictionary`) cuts them with DictCut's :class:`~gpu_text.segment.Segmenter`.

User-defined symbols (``symbols``, a trie of the model's USER_DEFINED pieces) are found first, as
SentencePiece does: scanning each string left to right, the longest symbol starting at a character
is taken whole and the scan resumes after it. Each one becomes a pre-token of its own that carries
its piece id; the text between them is split as above, each stretch on its own. On the device
(:meth:`PreTokenizer.symbol_marks`) the symbols are found and their overlaps resolved by the
pre-tokenizer's own chunked scan (``cuda/pre_tokenizer.cu``), without a host read.

Matching is leftmost-longest. The patterns are compiled once, here, into a DFA over six symbols
(other, S, N, A, H, apostrophe); the kernels (``cuda/pre_tokenizer.cu`` and its Numba twin) run it.
From the DFA also comes the table of symbol pairs no match can span: a pre-token must start
between such a pair whatever precedes it, so the kernels cut every string there first and scan
the pieces in parallel (see ``cuda/pre_tokenizer.cu``).

The seed's dictionary cutter runs a forward Viterbi keeping the first candidate on ties; DictCut's
Segmenter (used here) runs it backward keeping the shortest word on ties, and leaves out the
one-character fallback edge where a dictionary word covers the same character (whose weight is
never lower). The two agree except on exactly tied paths.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.arrays import to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch, as_text_batch
from gpu_text.ragged import RaggedArray, row_ids
from gpu_text.segment import Dictionary, Segmenter
from gpu_text.specs import spec_mapping, spec_value
from gpu_text.tokenizer.normalizer import SPACE_SYMBOL
from gpu_text.trie import DoubleArrayTrie
from gpu_text.trie.double_array import _device_key

SPLIT_MODES = ("word", "isolate", "whitespace", "none")  # a mode's index is the seed's PreTokenizerSpec.cut
DIGIT_MODES = ("keep", "split")

# DFA input symbols; OTHER, DIGIT, ALPHA and HAN keep gpu_text.utf8.CharClass's numbers, SPACE is
# the space symbol (class SPACE characters such as tab count as OTHER). Keep in sync with
# PT_* in cuda/pre_tokenizer.cu and cpu_fallback/pre_tokenizer.py.
OTHER, SPACE, DIGIT, ALPHA, HAN, APOSTROPHE = range(6)
N_SYMBOLS = 6
DEAD = 0  # state 0 rejects everything; the scan stops there
START = 1


# --- a tiny regular-expression compiler over symbol sets (Thompson NFA, then subsets) ---------

def _sym(*symbols: int) -> tuple:
    return ("set", frozenset(symbols))


def _not(*symbols: int) -> tuple:
    return ("set", frozenset(range(N_SYMBOLS)) - frozenset(symbols))


def _seq(*nodes: tuple) -> tuple:
    return ("seq", nodes)


def _alt(*nodes: tuple) -> tuple:
    return ("alt", nodes)


def _star(node: tuple) -> tuple:
    return ("star", node)


def _opt(node: tuple) -> tuple:
    return ("alt", (node, ("seq", ())))


def _plus(node: tuple) -> tuple:
    return _seq(node, _star(node))


def _pattern(split: str, digits: str, han_per_char: bool) -> tuple:
    letters, han, digit, space = _sym(ALPHA), _sym(HAN), _sym(DIGIT), _sym(SPACE)
    han_run = han if han_per_char else _plus(han)
    digit_run = digit if digits == "split" else _plus(digit)
    if split == "word":
        return _alt(_seq(_opt(_not(ALPHA, HAN, DIGIT)), _plus(letters)), han_run, digit_run,
                    _seq(_opt(space), _plus(_not(ALPHA, HAN, DIGIT, SPACE))), space)
    if split == "isolate":
        return _alt(_seq(_plus(letters), _star(_seq(_sym(APOSTROPHE), _plus(letters)))), han_run, digit_run,
                    _not(ALPHA, HAN, DIGIT))
    if split == "none":
        return _plus(_not())
    if digits == "split":  # SentencePiece's split_digits: no piece mixes a digit with anything
        return _alt(_seq(_opt(space), _plus(_not(SPACE, DIGIT))), space, digit)
    return _alt(_seq(space, _star(_not(SPACE))), _plus(_not(SPACE)))


def _nfa(pattern: tuple) -> tuple[list[list[int]], list[list[tuple[frozenset, int]]], int]:
    """Thompson construction: (epsilon edges, symbol-set edges, accepting state); start is 0."""
    eps: list[list[int]] = []
    moves: list[list[tuple[frozenset, int]]] = []

    def new() -> int:
        eps.append([])
        moves.append([])
        return len(eps) - 1

    def build(node: tuple, a: int, b: int) -> None:
        kind, arg = node
        if kind == "set":
            moves[a].append((arg, b))
        elif kind == "alt":
            for child in arg:
                build(child, a, b)
        elif kind == "seq":
            for child in arg:
                mid = new()
                build(child, a, mid)
                a = mid
            eps[a].append(b)
        else:  # star: a loop state, entered and left by epsilon edges
            loop = new()
            eps[a].append(loop)
            eps[loop].append(b)
            build(arg, loop, loop)

    start, accept = new(), new()
    build(pattern, start, accept)
    return eps, moves, accept


@dataclass(frozen=True)
class PreTokenDFA:
    """The compiled split of one configuration: what the ``pretokenize`` kernels run.

    ``table[state, symbol]`` is the next state (``DEAD`` = 0 stops the scan, ``START`` = 1 begins
    it), ``accepting[state]`` marks the ends of matches, ``joinable[a, b]`` is 0 when no match
    holds symbol ``a`` followed by ``b`` (a pre-token must start between them), and ``space`` is
    the space symbol's codepoint. ``split``, ``digits`` and ``han_per_char`` describe the patterns
    (the test reference matches those directly).

    >>> dfa = PreTokenDFA.compile("word")
    >>> dfa.table.shape[1], bool(dfa.joinable[ALPHA, SPACE]), bool(dfa.joinable[SPACE, ALPHA])
    (6, False, True)
    """

    split: str
    digits: str
    han_per_char: bool
    space: int
    table: np.ndarray
    accepting: np.ndarray
    joinable: np.ndarray

    @classmethod
    def compile(cls, split: str = "word", digits: str = "keep", han_per_char: bool = False,
                space: str = SPACE_SYMBOL) -> "PreTokenDFA":
        """Subset construction of the configuration's pattern.

        >>> PreTokenDFA.compile("isolate", "split", True).accepting.tolist()[:2]
        [0, 0]
        """
        eps, moves, accept = _nfa(_pattern(split, digits, han_per_char))

        def closure(states: set[int]) -> frozenset[int]:
            todo, seen = list(states), set(states)
            while todo:
                for t in eps[todo.pop()]:
                    if t not in seen:
                        seen.add(t)
                        todo.append(t)
            return frozenset(seen)

        ids: dict[frozenset[int], int] = {frozenset(): DEAD, closure({0}): START}
        order = [frozenset(), closure({0})]
        rows: list[list[int]] = [[DEAD] * N_SYMBOLS]
        while len(rows) < len(order):
            current = order[len(rows)]
            row = []
            for symbol in range(N_SYMBOLS):
                target = closure({b for s in current for symbols, b in moves[s] if symbol in symbols})
                if target not in ids:
                    ids[target] = len(order)
                    order.append(target)
                row.append(ids[target])
            rows.append(row)
        table = np.array(rows, np.int32)
        accepting = np.array([accept in states for states in order], np.uint8)
        # a pair (a, b) is joinable when some state entered on a still moves on b
        joinable = np.zeros((N_SYMBOLS, N_SYMBOLS), np.uint8)
        for state in range(START, len(order)):
            for a in range(N_SYMBOLS):
                entered = table[state, a]
                if entered != DEAD:
                    joinable[a] |= table[entered] != DEAD
        return cls(split, digits, han_per_char, ord(space), table, accepting, joinable)


@dataclass(frozen=True)
class PreTokens:
    """Pre-tokens of every string: byte offsets ``[start, end)`` within that string, in order.

    The pre-tokens of a string cover all of its bytes (nothing is dropped). ``symbol_ids`` (when
    user-defined symbols were given) is each pre-token's symbol id, -1 for ordinary text.

    >>> p = PreTokenizer().pre_tokenize(["ab▁c"], backend="cpu")
    >>> p.starts.to_pylist(), p.ends.to_pylist(), p.to_pylist()
    ([[0, 2]], [[2, 6]], [['ab', '▁c']])
    """

    texts: TextBatch
    starts: RaggedArray
    ends: RaggedArray
    symbol_ids: RaggedArray | None = None

    def to_pylist(self) -> list[list[str]]:
        """The pre-tokens as strings (malformed bytes shown as U+FFFD).

        >>> PreTokenizer(split="isolate").pre_tokenize(["don't▁go"], backend="cpu").to_pylist()
        [["don't", '▁', 'go']]
        """
        host, starts = self.texts.to_numpy(), self.starts.to_numpy()
        # pre-tokens tile the byte buffer, so they are themselves a batch (after an empty head)
        bounds = starts.values + host.offsets[:-1][row_ids(starts.offsets)]
        pieces = TextBatch(host.data, np.concatenate([[0], bounds, [host.data.size]])).to_pylist()[1:]
        rows = starts.offsets.tolist()
        return [pieces[a:b] for a, b in zip(rows, rows[1:])]


class PreTokenizer:
    """Splits normalized text into pre-tokens (see the module docstring for the patterns).

    Built, not learnt (no ``fit``): the constructor compiles the patterns into ``dfa`` and, for a
    dictionary ``cn``, builds the ``segmenter`` that cuts Han runs.

    >>> PreTokenizer().pre_tokenize_strings(["Hello,▁World!▁don't▁你好，世界。123abc"])[0]
    ['Hello', ',', '▁World', '!', '▁don', "'t", '▁', '你好', '，', '世界', '。', '123', 'abc']
    >>> PreTokenizer(split="isolate", digits="split", cn="char").pre_tokenize_strings(["你好123▁hi"])
    [['你', '好', '1', '2', '3', '▁', 'hi']]
    """

    def __init__(self, split: str = "word", digits: str = "keep", cn: str | Path | Dictionary | None = None,
                 space: str = SPACE_SYMBOL) -> None:
        if split not in SPLIT_MODES:
            raise ValueError(f"split must be one of {SPLIT_MODES}, got {split!r}")
        if digits not in DIGIT_MODES:
            raise ValueError(f"digits must be one of {DIGIT_MODES}, got {digits!r}")
        if len(space) != 1:
            raise ValueError(f"space must be one character, got {space!r}")
        if split in ("whitespace", "none") and cn is not None:
            raise ValueError(f"cn needs split='word' or 'isolate' (split={split!r} keeps Han inside its pieces)")
        if split == "none" and digits != "keep":
            raise ValueError("split='none' keeps every string whole: it takes digits='keep'")
        self.split, self.digits, self.cn, self.space = split, digits, cn, space
        self.dfa = PreTokenDFA.compile(split, digits, cn == "char", space)
        self._dfa_on_device: dict[tuple[str, int], PreTokenDFA] = {}
        self.segmenter = Segmenter(cn) if cn is not None and cn != "char" else None

    def __repr__(self) -> str:
        return f"PreTokenizer(split={self.split!r}, digits={self.digits!r}, cn={self.cn!r}, space={self.space!r})"

    def pre_tokenize(self, texts: Any, backend: str | Backend | None = None,
                     symbols: DoubleArrayTrie | None = None) -> PreTokens:
        """Pre-tokens of a batch (``TextBatch``, pyarrow strings, or a list of str/bytes);
        ``symbols``: user-defined symbols (words → piece ids) that stand whole (module docstring).

        >>> PreTokenizer().pre_tokenize(["a▁▁b", ""], backend="cpu").to_pylist()
        [['a', '▁', '▁b'], []]
        >>> p = PreTokenizer().pre_tokenize(["a<m>b"], "cpu", DoubleArrayTrie.build(["<m>"], [7]))
        >>> p.to_pylist(), p.symbol_ids.to_pylist()
        ([['a', '<m>', 'b']], [[-1, 7, -1]])
        """
        be = get_backend(backend)
        xp = be.xp
        batch = as_text_batch(texts).to_device(be.xp)
        match_starts = match_ends = match_ids = None
        bounds = batch.offsets
        if symbols is not None:
            match_starts, match_ends, match_ids = symbol_matches(symbols, batch.data, batch.offsets, be)
            if match_starts.size:  # the stretches between symbols (and the symbols) are split each on its own
                bounds = xp.sort(xp.concatenate([batch.offsets, match_starts, match_ends]))
            else:
                match_starts = None
        if self.split == "none":  # no kernel: one thread must not scan a whole string
            starts = bounds[:-1][bounds[1:] > bounds[:-1]]
        else:
            starts, first_symbols = be.op("pre_tokenizer", "pretokenize")(batch.data, bounds, self.device_dfa(be))
            if self.segmenter is not None:
                starts = self._cut_han(be, batch.data, starts, first_symbols)
        ids = None
        if match_starts is not None:
            # a symbol is one pre-token: drop the starts the split (or the Han cutter) put inside it
            k = xp.searchsorted(match_starts, starts, side="right") - 1
            at_match = xp.maximum(k, 0)
            inside = (k >= 0) & (starts < match_ends[at_match])
            first = inside & (starts == match_starts[at_match])
            keep = ~inside | first
            starts, ids = starts[keep], xp.where(first, match_ids[at_match], -1)[keep].astype(xp.int32)
        n_bytes = batch.data.size
        ends = xp.empty_like(starts)
        ends[:-1] = starts[1:]
        ends[-1:] = n_bytes  # a string's last pre-token ends where the next non-empty string starts
        rows = xp.searchsorted(starts, batch.offsets).astype(xp.int64)
        base = batch.offsets[:-1][row_ids(rows)]
        return PreTokens(batch, RaggedArray(starts - base, rows, check=False),
                         RaggedArray(ends - base, rows, check=False),
                         None if symbols is None else RaggedArray(
                             ids if ids is not None else xp.full(starts.size, -1, xp.int32), rows, check=False))

    def marks(self, texts: TextBatch, backend: str | Backend | None = None) -> Any:
        """Per byte of ``texts.data`` (a batch on the backend's device): 0, or at every pre-token
        start 1 + the DFA symbol of its first character (with ``split="none"``: 1 at every text's
        first byte); the same pre-tokens as :meth:`pre_tokenize`. Without a host read; with a
        dictionary ``cn``, the words of its segmenter's segmentation of the same texts (whose Han
        runs are the Han pre-tokens, :meth:`Segmenter.word_marks
        <gpu_text.segment.Segmenter.word_marks>`) that start with a Han character start pre-tokens.

        >>> PreTokenizer().marks(TextBatch.from_strings(["ab▁c", "1"]), "cpu").tolist()
        [4, 0, 2, 0, 0, 0, 3]
        >>> PreTokenizer("none").marks(TextBatch.from_strings(["ab▁c", "", "1"]), "cpu").tolist()
        [1, 0, 0, 0, 0, 0, 1]
        >>> cn = Dictionary(["你好"], np.array([5]), 9)
        >>> PreTokenizer(cn=cn).marks(TextBatch.from_strings(["你好吗"]), "cpu").tolist()
        [5, 0, 0, 0, 0, 0, 5, 0, 0]
        """
        be = get_backend(backend)
        if self.split == "none":  # no kernel: a mark at each text's start (one past the data for empty last texts)
            marks = be.xp.zeros(texts.data.size + 1, be.xp.uint8)
            marks[texts.offsets[:-1]] = 1
            return marks[:-1]
        words = None if self.segmenter is None else self.segmenter.word_marks(texts, be)
        return be.op("pre_tokenizer", "pretokenize_marks")(texts.data, texts.offsets, self.device_dfa(be), words)

    def symbol_marks(self, texts: TextBatch, symbols: DoubleArrayTrie, width: int,
                     backend: str | Backend | None = None) -> tuple[Any, Any]:
        """:meth:`marks` with user-defined symbols (``symbols``: words → piece ids) taken whole, as
        :meth:`pre_tokenize` takes them, without a host read: the marks (7 at a symbol's pre-token)
        and, per byte, the longest symbol at each character (int32: its piece id << 8 | its byte
        length, 0 for none), which :meth:`BPEModel.encode_marked
        <gpu_text.tokenizer.bpe.BPEModel.encode_marked>` reads. ``width``: :func:`symbol_scan_width`
        of the words. For the split alone: not for a dictionary ``cn`` (``ValueError``).

        >>> marks, at = PreTokenizer().symbol_marks(TextBatch.from_strings(["a<m>b"]),
        ...                                         DoubleArrayTrie.build(["<m>"], [7]), 4, "cpu")
        >>> marks.tolist(), at.tolist()
        ([4, 7, 0, 0, 4], [0, 1795, 0, 0, 0])
        """
        if self.segmenter is not None:
            raise ValueError("PreTokenizer.symbol_marks covers the split alone: not a dictionary cn")
        be = get_backend(backend)
        return be.op("pre_tokenizer", "pretokenize_symbol_marks")(texts.data, texts.offsets, self.device_dfa(be),
                                                                   *symbols.arrays(be), width)

    def device_dfa(self, backend: str | Backend | None = None) -> PreTokenDFA:
        """The compiled DFA with its tables on the backend's device: copied there once and kept.

        >>> PreTokenizer().device_dfa("cpu").table.shape[1]
        6
        """
        be = get_backend(backend)
        key = _device_key(be.xp)
        if key not in self._dfa_on_device:
            dfa = self.dfa
            self._dfa_on_device[key] = replace(dfa, table=be.asarray(dfa.table), accepting=be.asarray(dfa.accepting),
                                               joinable=be.asarray(dfa.joinable))
        return self._dfa_on_device[key]

    def _cut_han(self, be: Backend, data: Any, starts: Any, first_symbols: Any) -> Any:
        """Token starts with the dictionary's word boundaries added inside Han pre-tokens."""
        xp = be.xp
        han = xp.flatnonzero(first_symbols == HAN)
        if han.size == 0:
            return starts
        next_starts = xp.empty_like(starts)  # each pre-token's end: the next one's start, the data's end for the last
        next_starts[:-1] = starts[1:]
        next_starts[-1:] = data.size
        span_starts, span_ends = xp.ascontiguousarray(starts[han]), xp.ascontiguousarray(next_starts[han])
        word_ends = self.segmenter.word_ends(data, span_starts, span_ends, be).values
        # a span's last word ends at the next pre-token's start (or the buffer's end): unique drops it
        return xp.unique(xp.concatenate([starts, word_ends[word_ends < data.size]]))

    def pre_tokenize_strings(self, texts: list[str], backend: str | Backend | None = None) -> list[list[str]]:
        """Pre-tokens of each string, as strings.

        >>> PreTokenizer(split="whitespace").pre_tokenize_strings(["▁Hello,▁world!", "a▁▁b"])
        [['▁Hello,', '▁world!'], ['a', '▁', '▁b']]
        """
        return self.pre_tokenize(texts, backend).to_pylist()

    def to_dict(self) -> dict[str, Any]:
        """The configuration as plain JSON values; a dictionary ``cn`` is its segmenter's spec
        (:meth:`gpu_text.segment.Segmenter.to_dict`: the words, frequencies and compat mode).

        >>> PreTokenizer(split="isolate", cn="char").to_dict()
        {'split': 'isolate', 'digits': 'keep', 'space': '▁', 'cn': 'char'}
        """
        cn = self.segmenter.to_dict() if self.segmenter is not None else self.cn
        return {"split": self.split, "digits": self.digits, "space": self.space, "cn": cn}

    @classmethod
    def from_dict(cls, spec: Any) -> "PreTokenizer":
        """The pre-tokenizer a :meth:`to_dict` spec describes (a malformed one is a ``ValueError``).

        >>> spec = {"split": "word", "digits": "split", "space": "▁",
        ...         "cn": {"dictionary": {"words": ["你好"], "freqs": [5], "total": 9}, "compat": None}}
        >>> PreTokenizer.from_dict(spec).pre_tokenize_strings(["你好吗12"])
        [['你好', '吗', '1', '2']]
        """
        spec = spec_mapping(spec, "PreTokenizer", ("split", "digits", "space", "cn"))
        cn = spec_value(spec, "cn", (str, dict, type(None)), "PreTokenizer")
        if isinstance(cn, str) and cn != "char":
            raise ValueError(f"PreTokenizer spec: cn must be null, \"char\" or a segmenter spec, not {cn!r}")
        if isinstance(cn, dict):
            dictionary, compat = Segmenter.arguments_from_dict(cn)
            if dictionary is None or compat is not None:  # the pre-tokenizer builds Segmenter(dictionary)
                raise ValueError("PreTokenizer spec: a segmenter cn needs a dictionary and compat null")
            cn = dictionary
        return cls(spec_value(spec, "split", str, "PreTokenizer"), spec_value(spec, "digits", str, "PreTokenizer"),
                   cn, spec_value(spec, "space", str, "PreTokenizer"))


def symbol_matches(symbols: DoubleArrayTrie, data: Any, offsets: Any, backend: str | Backend | None = None
                   ) -> tuple[Any, Any, Any]:
    """The user-defined symbols SentencePiece takes whole in the strings ``data[offsets[i]:offsets[i+1]]``:
    scanning left to right, the longest symbol at a character, then on after it. Returns their
    starts and ends (int64 positions in ``data``, ascending) and their values (int32).

    Every match at every character comes from one batched trie search; only the choice among
    overlapping matches is sequential, and it runs on the host over those matches alone.

    >>> t = DoubleArrayTrie.build(["ab", "abc", "bcd", "d"], [0, 1, 2, 3])
    >>> [a.tolist() for a in symbol_matches(t, np.frombuffer(b"abcdd", np.uint8), np.array([0, 5]), "cpu")]
    [[0, 3, 4], [3, 4, 5], [1, 3, 3]]
    """
    be = get_backend(backend)
    xp = be.xp
    starts, ends, values, _ = symbols.prefix_search_spans(data, offsets[:-1], offsets[1:], be)
    if starts.size == 0:
        return starts, ends, values
    # edges come ordered by start, then end: the last edge of each start is its longest match
    last = xp.flatnonzero(xp.concatenate([starts[1:] != starts[:-1], xp.ones(1, bool)]))
    starts, ends, values = starts[last], ends[last], values[last]
    host_starts, host_ends = to_host(starts), to_host(ends)
    covered = np.maximum.accumulate(host_ends)
    # a match starting before an earlier match's end may lose to it; all others stand
    contested = np.flatnonzero(host_starts[1:] < covered[:-1]) + 1
    if contested.size == 0:
        return starts, ends, values
    keep = np.ones(host_starts.size, bool)
    keep[contested] = False
    uncontested = np.where(keep, np.arange(host_starts.size), 0)
    last_free = np.maximum.accumulate(uncontested)  # the latest uncontested match at or before each
    taken_end = -1
    for i in contested.tolist():
        # taken matches do not overlap, so the later of these two ends bounds every taken one
        if host_starts[i] >= max(host_ends[last_free[i]], taken_end):
            keep[i] = True
            taken_end = int(host_ends[i])
    chosen = be.asarray(np.flatnonzero(keep))
    return starts[chosen], ends[chosen], values[chosen]


def symbol_scan_width(words: dict[bytes, int]) -> int | None:
    """The ``width`` :meth:`PreTokenizer.symbol_marks` takes for user symbols (words → piece ids):
    the longest word's bytes, at least 4 (a character's); None when the marks cannot hold them: a
    word that is not well-formed UTF-8 (the scan steps by characters), longer than 255 bytes or
    with an id of 2**23 or more (a symbol's id and length share an int32).

    >>> symbol_scan_width({b"<mask>": 5}), symbol_scan_width({b"\\xff": 5}), symbol_scan_width({b"a": 1 << 23})
    (6, None, None)
    """
    for word, value in words.items():
        try:
            word.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not 0 < len(word) <= 255 or not 0 <= value < 1 << 23:
            return None
    return max([4] + [len(word) for word in words])


def pre_tokenize_strings(texts: list[str], split: str = "word", digits: str = "keep",
                         cn: str | Path | Dictionary | None = None, space: str = SPACE_SYMBOL,
                         backend: str | Backend | None = None) -> list[list[str]]:
    """One-call pre-tokenization to lists of strings.

    >>> pre_tokenize_strings(["hello▁,world", "year▁2024"])
    [['hello', '▁,', 'world'], ['year', '▁', '2024']]
    """
    return PreTokenizer(split, digits, cn, space).pre_tokenize_strings(texts, backend)


__all__ = ["PreTokenDFA", "PreTokenizer", "PreTokens", "pre_tokenize_strings", "symbol_matches", "symbol_scan_width"]
