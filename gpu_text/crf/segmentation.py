"""The feature columns a CRF word segmenter sees: every character of the raw text becomes a token
whose columns are derived from it, so the default pattern needs no columns from the user.

Columns (:data:`COLUMNS`):

* ``char``: the character itself (Wapic's models; old gpu_text models);
* ``fold``: the character through a width / compatibility fold, the single-character entries of
  the project's NFKC charsmap (:func:`gpu_text.tokenizer.normalizer.load_charsmap`): ``１`` and
  ``1``, ``Ａ`` and ``A``, ``％`` and ``%``, ``，`` and ``,`` are one value, so a model trained on
  one width segments the other the same way. Only the features see it; the words keep the input's
  characters;
* ``class``: the folded character's class (:func:`character_class`): ASCII digit, Chinese numeral,
  Latin letter, punctuation / symbol, Han, other, and one class per date / number unit
  (年 月 日 时 分 秒 点 号 万 亿 % ℃);
* ``dict_begin`` / ``dict_end`` / ``dict_inside``: the length (capped at :data:`DICT_CAP`, ``0``
  for none) of the longest dictionary word that starts at / ends at / strictly contains the
  character, found with the project's double-array trie over the folded text (optional).

:class:`SegmentationFeatures` names a model's columns (and holds its dictionary); the model file
stores it, and :meth:`gpu_text.crf.CRF.segment` rebuilds the same columns from raw text
(:func:`gpu_text.crf.segmenter.fit_segmenter` trains such a model).
No CUDA twin: column building is string work on the host.
"""
from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gpu_text.crf.features import FeatureEncoder
    from gpu_text.crf.patterns import InternedColumn

COLUMNS = ("char", "fold", "class", "dict_begin", "dict_end", "dict_inside")
DICTIONARY_COLUMNS = ("dict_begin", "dict_end", "dict_inside")
DEFAULT_COLUMNS = ("fold", "class")
# word lengths above this share one value: longer words are rare and say the same thing
DICT_CAP = 6

# classes of folded characters: units first (one class each), then numerals, then by category
UNITS = {"年": "U年", "月": "U月", "日": "U日", "时": "U时", "分": "U分", "秒": "U秒", "点": "U点", "号": "U号",
         "万": "U万", "亿": "U亿", "%": "U%", "‰": "U%", "°C": "U℃", "℃": "U℃"}
CHINESE_NUMERALS = frozenset("〇○零一二三四五六七八九十百千两廿卅")


@functools.lru_cache(maxsize=1)
def fold_table() -> dict[str, str]:
    """Single characters the NFKC charsmap (SentencePiece's, shipped with the normalizer) rewrites,
    with their replacements; a replacement that would be empty is left out (the character stays).

    >>> t = fold_table(); t["１"], t["Ａ"], t["％"], t["，"], "中" in t
    ('1', 'A', '%', ',', False)
    """
    from gpu_text.tokenizer.normalizer import CHARSMAP_DIR

    # the shipped map's four arrays (gpu_text.tokenizer.normalizer.save_charsmap), read directly:
    # only the one-character sources (at most 4 UTF-8 bytes) become strings -- building all 225K
    # pairs as load_charsmap does took 0.2 s of every `crf segment` run
    with np.load(CHARSMAP_DIR / "NFKC.npz", allow_pickle=False) as f:
        sources, source_lengths = f["sources"].tobytes(), f["source_lengths"].astype(np.int64)
        targets, target_lengths = f["targets"].tobytes(), f["target_lengths"].astype(np.int64)
    source_starts = np.cumsum(source_lengths) - source_lengths
    target_starts = np.cumsum(target_lengths) - target_lengths
    table = {}
    for i in np.flatnonzero(source_lengths <= 4).tolist():
        a, b = int(source_starts[i]), int(target_starts[i])
        text = sources[a:a + int(source_lengths[i])].decode("utf-8")
        folded = targets[b:b + int(target_lengths[i])].decode("utf-8")
        if len(text) == 1 and folded and folded != text:
            table[text] = folded
    return table


def fold(char: str) -> str:
    """The folded form of one character (itself when the fold leaves it alone).

    >>> fold("９"), fold("ｂ"), fold("℃"), fold("京")
    ('9', 'b', '°C', '京')
    """
    return fold_table().get(char, char)


def _is_han(code: int) -> bool:
    return (0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF
            or 0x20000 <= code <= 0x323AF)


def character_class(folded: str) -> str:
    """The class of a folded character (see the module docstring): ``D`` ASCII digit, ``N``
    Chinese numeral, ``L`` Latin letter, ``P`` punctuation or symbol, ``H`` Han, ``O`` other, and
    ``U<unit>`` for a unit. A multi-character fold (``…`` is ``...``) takes its first character's.

    >>> [character_class(fold(c)) for c in "１九a，京年％℃ä"]
    ['D', 'N', 'L', 'P', 'H', 'U年', 'U%', 'U℃', 'O']
    >>> character_class("")
    'O'
    """
    if folded in UNITS:
        return UNITS[folded]
    if not folded:
        return "O"
    first = folded[0]
    if first in CHINESE_NUMERALS:
        return "N"
    if "0" <= first <= "9":
        return "D"
    if ("a" <= first <= "z") or ("A" <= first <= "Z"):
        return "L"
    if _is_han(ord(first)):
        return "H"
    if unicodedata.category(first)[0] in "PS":
        return "P"
    return "O"


class _CharColumns(dict):
    """Memo of (fold, class) per character: a text's columns are then one dict lookup a character."""

    def __missing__(self, char: str) -> tuple[str, str]:
        folded = fold(char)
        value = self[char] = (folded, character_class(folded))
        return value


_CHAR_COLUMNS = _CharColumns()


class DictionaryMatcher:
    """Dictionary words of a lexicon found in folded text with the project's double-array trie.

    >>> m = DictionaryMatcher(["南京", "南京市", "市长", "长江大桥"])
    >>> m.columns(["南京市长江大桥"])[0].tolist()  # begin, end, inside lengths per character
    [[3, 0, 0], [0, 2, 3], [2, 3, 0], [4, 2, 0], [0, 0, 4], [0, 0, 4], [0, 4, 0]]
    """

    def __init__(self, words: Iterable[str]) -> None:
        from gpu_text.trie import DoubleArrayTrie

        self.words = sorted({w for w in (self.fold_text(word) for word in words) if w})
        self.trie = DoubleArrayTrie.build(self.words) if self.words else None

    @staticmethod
    def fold_text(text: str) -> str:
        """``text`` with every character whose fold is one character folded (lengths are kept,
        so trie matches line up with the characters).

        >>> DictionaryMatcher.fold_text("１９９８年℃")
        '1998年℃'
        """
        table = fold_table()
        return "".join(f if len(f := table.get(c, c)) == 1 else c for c in text)

    def columns(self, pieces: Sequence[str]) -> list[np.ndarray]:
        """Per piece, an (n_chars, 3) int array: longest word beginning at, ending at and strictly
        containing each character (capped at :data:`DICT_CAP`; 0 for none)."""
        folded = [self.fold_text(p) for p in pieces]
        lengths = np.fromiter(map(len, folded), np.int64, len(folded))
        char_offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=char_offsets[1:])
        n = int(char_offsets[-1])
        out = np.zeros((n, 3), np.int64)
        if self.trie is not None and n:
            # lone surrogates become "?": one character each, so character positions still line up
            encoded = [p.encode("utf-8", "replace") for p in folded]
            byte_lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
            byte_offsets = np.zeros(byte_lengths.size + 1, np.int64)
            np.cumsum(byte_lengths, out=byte_offsets[1:])
            data = np.frombuffer(b"".join(encoded), np.uint8)
            starts, ends, _, _ = self.trie.prefix_search_spans(data, byte_offsets[:-1], byte_offsets[1:], "cpu")
            char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1  # the character each byte belongs to
            first = char_of_byte[starts]
            last = char_of_byte[ends - 1]
            length = np.minimum(last - first + 1, DICT_CAP)
            np.maximum.at(out[:, 0], first, length)
            np.maximum.at(out[:, 1], last, length)
            for k in range(3, DICT_CAP + 1):  # inside: the longest k with a word of length >= k covering
                chosen = length >= k
                cover = np.zeros(n + 1, np.int64)
                np.add.at(cover, first[chosen] + 1, 1)
                np.add.at(cover, last[chosen], -1)
                out[np.cumsum(cover)[:n] > 0, 2] = k
        return [out[char_offsets[i]:char_offsets[i + 1]] for i in range(len(pieces))]


class SegmentationFeatures:
    """The columns of a segmentation model (names from :data:`COLUMNS`) and, when they include the
    dictionary columns, its lexicon.

    >>> f = SegmentationFeatures()
    >>> f.columns, f.tokens(["１月５日"])[0]
    (('fold', 'class'), [('1', 'D'), ('月', 'U月'), ('5', 'D'), ('日', 'U日')])
    >>> f.tokens(["1月5日"]) == f.tokens(["１月５日"])
    True
    >>> SegmentationFeatures(("fold", "dict_begin"))
    Traceback (most recent call last):
    ...
    ValueError: the dictionary columns need a dictionary (words=...)
    """

    def __init__(self, columns: Sequence[str] = DEFAULT_COLUMNS, words: Iterable[str] | None = None) -> None:
        columns = tuple(columns)
        unknown = [c for c in columns if c not in COLUMNS]
        if unknown or not columns or len(set(columns)) != len(columns):
            raise ValueError(f"segmentation columns must be distinct names of {COLUMNS}, got {list(columns)}")
        wants_dictionary = any(c in DICTIONARY_COLUMNS for c in columns)
        if wants_dictionary and words is None:
            raise ValueError("the dictionary columns need a dictionary (words=...)")
        if words is not None and not wants_dictionary:
            raise ValueError("a dictionary was given but no dictionary column uses it")
        self.columns = columns
        self.matcher = DictionaryMatcher(words) if words is not None else None

    @classmethod
    def with_dictionary(cls, words: Iterable[str], columns: Sequence[str] = DEFAULT_COLUMNS) -> "SegmentationFeatures":
        """``columns`` plus the three dictionary columns, over ``words``.

        >>> SegmentationFeatures.with_dictionary(["南京"]).columns
        ('fold', 'class', 'dict_begin', 'dict_end', 'dict_inside')
        """
        return cls(tuple(columns) + DICTIONARY_COLUMNS, words)

    @property
    def words(self) -> list[str]:
        """The (folded, sorted) dictionary words; empty without a dictionary.

        >>> SegmentationFeatures.with_dictionary(["ＡＢ", "中国"]).words
        ['AB', '中国']
        """
        return self.matcher.words if self.matcher is not None else []

    def tokens(self, pieces: Sequence[str]) -> list[list[tuple[str, ...]]]:
        """One sentence per piece (text without whitespace): a token per character, its columns
        in :attr:`columns` order (see the class example)."""
        memo = _CHAR_COLUMNS
        dictionary = self.matcher.columns(pieces) if self.matcher is not None else None
        names = [str(i) for i in range(DICT_CAP + 1)]
        out = []
        for k, piece in enumerate(pieces):
            if self.columns == DEFAULT_COLUMNS:  # the common case, one lookup a character
                out.append([memo[c] for c in piece])
                continue
            rows = []
            values = dictionary[k].tolist() if dictionary is not None else None
            for i, c in enumerate(piece):
                folded, kind = memo[c]
                row = []
                for name in self.columns:
                    if name == "char":
                        row.append(c)
                    elif name == "fold":
                        row.append(folded)
                    elif name == "class":
                        row.append(kind)
                    else:
                        row.append(names[values[i][DICTIONARY_COLUMNS.index(name)]])
                rows.append(tuple(row))
            out.append(rows)
        return out

    def columns_of(self, pieces: Sequence[str]) -> tuple[list["InternedColumn"], np.ndarray]:
        """The columns of ``pieces`` (one sentence each) as interned columns and the sentence
        offsets, for :meth:`~gpu_text.crf.features.FeatureSpace.encode_columns`: the characters
        are coded with numpy and only the distinct ones go through the fold and the classes, so
        the cost a character is a few array operations (:meth:`tokens` gives the same values as
        tuples, :meth:`value_ids` as the value ids :meth:`~gpu_text.crf.CRF.segment`'s kernel reads).

        >>> cols, offsets = SegmentationFeatures().columns_of(["１月", "1"])
        >>> [[c.distinct[k] for k in c.codes] for c in cols], offsets.tolist()
        ([['1', '月', '1'], ['D', 'U月', 'D']], [0, 2, 3])
        """
        from gpu_text.crf.patterns import InternedColumn

        lengths = np.fromiter(map(len, pieces), np.int64, len(pieces))
        offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # UTF-32 gives one code unit a character (a lone surrogate included, passed through)
        codes = np.frombuffer("".join(pieces).encode("utf-32-le", "surrogatepass"), np.uint32)
        distinct, inverse = np.unique(codes, return_inverse=True)
        chars = [chr(c) for c in distinct.tolist()]
        memo = _CHAR_COLUMNS
        inverse = inverse.astype(np.int64).ravel()
        dictionary = None
        if self.matcher is not None:
            dictionary = (np.concatenate(self.matcher.columns(pieces)) if len(pieces) else np.zeros((0, 3), np.int64))
        names = [str(i) for i in range(DICT_CAP + 1)]
        out = []
        for name in self.columns:
            if name == "char":
                out.append(InternedColumn(inverse, chars))
            elif name == "fold":
                out.append(InternedColumn(inverse, [memo[c][0] for c in chars]))
            elif name == "class":
                out.append(InternedColumn(inverse, [memo[c][1] for c in chars]))
            else:
                out.append(InternedColumn(np.ascontiguousarray(dictionary[:, DICTIONARY_COLUMNS.index(name)]), names))
        return out, offsets

    def value_ids(self, encoder: "FeatureEncoder", pieces: Sequence[str], codes: np.ndarray) -> np.ndarray:
        """The per-position value ids of ``encoder``'s derived columns (``(D, n)`` int32, the
        ``crf_features`` kernels' ``values``) for ``pieces`` (one sentence each) whose characters,
        concatenated, are the code points ``codes``: the character columns through the model's
        per-code-point tables (each distinct character folded and classed once per model), the
        dictionary columns from the trie. The same values :meth:`columns_of` gives as strings.

        >>> from gpu_text.crf.segmenter import fit_segmenter
        >>> crf = fit_segmenter(["１月 ５日"], rho1=0.0, backend="cpu")
        >>> enc = crf.space_.encoder()
        >>> ids = crf.segmentation_.value_ids(enc, ["1月"], np.array([49, 26376], np.uint32))
        >>> [[crf.space_.values.strings[i] for i in row] for row in ids.tolist()]
        [['1', '月'], ['D', 'U月']]
        """
        out = np.empty((len(encoder.derived), codes.size), np.int32)
        dictionary = None
        memo = _CHAR_COLUMNS
        for d, (column, _) in enumerate(encoder.derived):
            if column >= len(self.columns):
                raise ValueError(f"a pattern reads column {column} but the segmentation has {len(self.columns)} "
                                 f"observation column(s) ({', '.join(self.columns)})")
            name = self.columns[column]
            if name in DICTIONARY_COLUMNS:
                if dictionary is None:
                    dictionary = (np.concatenate(self.matcher.columns(pieces)) if len(pieces)
                                  else np.zeros((0, 3), np.int64))
                table = np.array([encoder.value_id(d, str(k)) for k in range(DICT_CAP + 1)], np.int32)
                out[d] = table[dictionary[:, DICTIONARY_COLUMNS.index(name)]]
                continue
            value_of = {"char": str, "fold": lambda c: memo[c][0], "class": lambda c: memo[c][1]}[name]
            out[d] = encoder.code_table(d, codes, value_of)[codes]
        return out

    def pattern(self) -> str:
        """The default pattern over these columns: :data:`gpu_text.crf.model.WAPIC_SEGMENTATION_PATTERN`'s
        character window on the folded (or raw) characters, the class window, and the dictionary
        columns when present.

        >>> print(SegmentationFeatures(("char",)).pattern().splitlines()[2])
        U02:%x[0,0]
        """
        lines = []
        char = self.columns.index("fold") if "fold" in self.columns else (
            self.columns.index("char") if "char" in self.columns else None)
        if char is not None:
            c = char
            lines += [f"U00:%x[-2,{c}]", f"U01:%x[-1,{c}]", f"U02:%x[0,{c}]", f"U03:%x[1,{c}]", f"U04:%x[2,{c}]",
                      f"U05:%x[-1,{c}]/%x[0,{c}]", f"U06:%x[0,{c}]/%x[1,{c}]", f"U07:%x[-2,{c}]/%x[-1,{c}]",
                      f"U08:%x[1,{c}]/%x[2,{c}]", f"U09:%x[-1,{c}]/%x[1,{c}]"]
        if "class" in self.columns:
            k = self.columns.index("class")
            lines += [f"U10:%x[-1,{k}]", f"U11:%x[0,{k}]", f"U12:%x[1,{k}]", f"U13:%x[-1,{k}]/%x[0,{k}]",
                      f"U14:%x[0,{k}]/%x[1,{k}]", f"U15:%x[-2,{k}]/%x[-1,{k}]/%x[0,{k}]",
                      f"U16:%x[-1,{k}]/%x[0,{k}]/%x[1,{k}]", f"U17:%x[0,{k}]/%x[1,{k}]/%x[2,{k}]"]
        names = [n for n in DICTIONARY_COLUMNS if n in self.columns]
        for j, name in enumerate(names):
            d = self.columns.index(name)
            lines += [f"U2{j}:%x[0,{d}]", f"U2{j + 3}:%x[-1,{d}]/%x[0,{d}]"]
        if len(names) == 3:
            b, e, i = (self.columns.index(n) for n in DICTIONARY_COLUMNS)
            lines.append(f"U26:%x[0,{b}]/%x[0,{e}]/%x[0,{i}]")
        return "\n".join(lines + ["B"]) + "\n"



def joined_words(codes: np.ndarray, starts_word: np.ndarray, text_offsets: np.ndarray) -> str:
    """The lines ``gpu-text crf segment`` writes: text ``j`` is the characters
    ``codes[text_offsets[j]:text_offsets[j + 1]]`` (code points), a space before each one that
    ``starts_word`` but the text's first, and a newline after it (an empty text is an empty line).
    Array operations only: no string per word.

    >>> codes = np.frombuffer("南京长江ab".encode("utf-32-le"), np.uint32)
    >>> joined_words(codes, np.array([1, 0, 1, 0, 1, 1], bool), np.array([0, 4, 4, 6]))
    '南京 长江\\n\\na b\\n'
    """
    n, n_texts = int(codes.size), int(text_offsets.size) - 1
    separator = np.asarray(starts_word, bool).copy()
    separator[text_offsets[:-1][text_offsets[:-1] < n]] = False  # a text's first character has none
    before = np.zeros(n + 1, np.int64)  # separators before each character (and in all)
    np.cumsum(separator, out=before[1:])
    lengths = np.diff(text_offsets)
    out = np.full(n + int(before[-1]) + n_texts, 0x20, np.uint32)
    out[np.arange(n) + before[1:] + np.repeat(np.arange(n_texts), lengths)] = codes
    out[text_offsets[1:] + before[text_offsets[1:]] + np.arange(n_texts)] = 0x0A
    return out.tobytes().decode("utf-32-le", "surrogatepass")
