"""compat="jieba" equals jieba.cut(HMM=False) with jieba's own dictionary on every pure-Han run of
the shared Chinese corpora (Sogou news and People's Daily)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpu_text.segment import Segmenter, load_dictionary
from tests.conftest import require, shared_data

# jieba cuts inside runs of [\u4E00-\u9FD5a-zA-Z0-9+#&._%-]; runs of \u4E00-\u9FD5 alone are Han
# for both jieba and gpu_text, so both segment exactly these strings whole.
PURE_HAN = re.compile("[\u4E00-\u9FD5]+")


def han_runs(paths: list[Path], join_words: bool) -> list[str]:
    """Distinct pure-Han runs; `join_words` removes the spaces of a segmented file first."""
    runs: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                runs.update(PURE_HAN.findall(line.replace(" ", "") if join_words else line))
    return sorted(runs)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["zh-sogou-news", "zh-people-daily-199801"])
def test_jieba_parity_on_every_pure_han_run(corpus):
    jieba = require("jieba")
    folder = shared_data(corpus)
    paths = sorted(p for p in folder.glob("*.txt") if p.name != "SOURCE.txt")
    if corpus == "zh-people-daily-199801":
        paths = [folder / "199801_segmented_words.txt"]  # the month's text, once its spaces are removed
    runs = han_runs(paths, join_words=corpus == "zh-people-daily-199801")
    dict_path = Path(jieba.__file__).parent / "dict.txt"
    ours = Segmenter(load_dictionary(dict_path), compat="jieba").segment(runs, backend="cpu").words()
    tokenizer = jieba.Tokenizer(str(dict_path))
    differing = [(run, got) for run, got in zip(runs, ours) if got != list(tokenizer.cut(run, HMM=False))]
    assert not differing, f"{len(differing)} of {len(runs)} runs differ, e.g. {differing[:3]}"
