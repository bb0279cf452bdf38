"""Segmentation scores: word-level precision, recall and F1 over spans, and the SIGHAN 2005
in-vocabulary / out-of-vocabulary recall given the training word list.

A word is correct when the predicted segmentation has a word with exactly its span. Gold and
predicted lines must spell the same text once spaces are removed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class SegmentationScore:
    precision: float
    recall: float
    f1: float
    gold_words: int
    predicted_words: int
    correct_words: int
    iv_recall: float | None = None
    oov_recall: float | None = None
    oov_rate: float | None = None

    def as_dict(self) -> dict:
        """The scores as a plain dict (for JSON).

        >>> score_words([["a", "b"]], [["a", "b"]]).as_dict()["f1"]
        1.0
        """
        return asdict(self)


def _span_keys(lines: Sequence[Sequence[str]]) -> np.ndarray:
    """One integer per word span: line << 40 | start << 20 | end (in characters)."""
    keys = []
    for row, words in enumerate(lines):
        lengths = np.fromiter((len(w) for w in words), np.int64, len(words))
        ends = np.cumsum(lengths)
        keys.append((np.int64(row) << 40) | ((ends - lengths) << 20) | ends)
    return np.concatenate(keys) if keys else np.zeros(0, np.int64)


def score_words(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]],
                vocabulary: Iterable[str] | None = None) -> SegmentationScore:
    """Score predicted word lists against gold ones, line by line.

    >>> s = score_words([["南京市", "长江", "大桥"]], [["南京", "市", "长江", "大桥"]], vocabulary={"长江"})
    >>> round(s.precision, 3), round(s.recall, 3), round(s.f1, 3), s.iv_recall, s.oov_recall
    (0.5, 0.667, 0.571, 1.0, 0.5)
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold lines but {len(predicted)} predicted lines")
    for row, (g, p) in enumerate(zip(gold, predicted)):
        if "".join(g) != "".join(p):
            raise ValueError(f"line {row + 1}: gold and predicted text differ ({''.join(g)[:40]!r} vs {''.join(p)[:40]!r})")
        if any(len(w) >= 1 << 20 for w in g) or len("".join(g)) >= 1 << 20:
            raise ValueError(f"line {row + 1} is longer than 2**20 characters")
    gold_keys = _span_keys(gold)
    pred_keys = _span_keys(predicted)
    correct_mask = np.isin(gold_keys, pred_keys)
    correct = int(correct_mask.sum())
    precision = correct / len(pred_keys) if len(pred_keys) else 0.0
    recall = correct / len(gold_keys) if len(gold_keys) else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    iv_recall = oov_recall = oov_rate = None
    if vocabulary is not None:
        vocab = vocabulary if isinstance(vocabulary, (set, frozenset, dict)) else set(vocabulary)
        in_vocab = np.fromiter((w in vocab for words in gold for w in words), bool, len(gold_keys))
        iv, oov = int(in_vocab.sum()), int((~in_vocab).sum())
        iv_recall = float(correct_mask[in_vocab].sum() / iv) if iv else None
        oov_recall = float(correct_mask[~in_vocab].sum() / oov) if oov else None
        oov_rate = oov / len(gold_keys) if len(gold_keys) else None
    return SegmentationScore(precision, recall, f1, len(gold_keys), len(pred_keys), correct, iv_recall, oov_recall,
                             oov_rate)


def read_segmented(path: str, separator: str | None = None) -> list[list[str]]:
    """Lines of a segmented file (words separated by whitespace, or by ``separator``). Lines end
    at ``\\n`` or ``\\r\\n`` only and a byte order mark is dropped, as everywhere
    (:func:`gpu_text.documents.read_documents`); the text must be UTF-8.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "s.txt")
    >>> _ = open(p, "wb").write("\\ufeff南京  市\\r\\n\\n长江 大桥\\n".encode())
    >>> read_segmented(p)
    [['南京', '市'], [], ['长江', '大桥']]
    """
    from gpu_text.documents import iter_documents

    lines = []
    for located in iter_documents(path, format="txt"):
        for number, raw in enumerate(located.batch.to_bytes_list(), located.first):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{number}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
            lines.append([w for w in line.split(separator) if w])
    return lines
