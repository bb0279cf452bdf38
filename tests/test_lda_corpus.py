"""LDA input: every corpus form gives the same TokenCorpus, vocabulary pruning and order, LDA-C, bad input."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from gpu_text.batch import TextBatch
from gpu_text.lda.corpus import TokenCorpus, as_corpus, is_ldac, read_ldac
from gpu_text.ragged import RaggedArray
from tests.conftest import require, shared_data

corpus_module = importlib.import_module("gpu_text.lda.corpus")


def sorted_docs(seed, n_docs=40, vocab=25):
    """Random documents whose words already come in vocabulary-id order (count descending, ties by
    first appearance), so that the column-ordered forms (CSR, LDA-C) hold the same token order."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1)
    docs = [np.sort(rng.choice(vocab, rng.integers(0, 12), p=p / p.sum())) for _ in range(n_docs)]
    docs[3] = np.zeros(0, np.int64)  # an empty document, kept
    docs[-1] = np.zeros(0, np.int64)  # last one empty too
    counts = np.bincount(np.concatenate(docs), minlength=vocab)
    first = {}
    for w in np.concatenate(docs).tolist():
        first.setdefault(w, len(first))
    seen = [w for w in range(vocab) if counts[w]]
    order = sorted(seen, key=lambda w: (-counts[w], first[w]))
    rank = {w: i for i, w in enumerate(order)}
    names = [f"t{w}" for w in order]
    ids = [np.sort(np.array([rank[w] for w in d.tolist()], np.int64)) for d in docs]
    return [[names[i] for i in d.tolist()] for d in ids], names, ids


def test_every_form_gives_the_same_corpus(tmp_path):
    docs, names, ids = sorted_docs(1)
    expected = as_corpus(docs)
    assert expected.vocabulary == names
    assert expected.words.tolist() == [i for d in ids for i in d.tolist()]
    assert expected.doc_lengths.tolist() == [len(d) for d in docs]
    text = "".join(" ".join(d) + "\n" for d in docs)
    (tmp_path / "c.txt").write_text(text)
    half = text.index("\n", len(text) // 2) + 1
    (tmp_path / "a.txt").write_text(text[:half].replace(" ", " \t "))
    (tmp_path / "b.txt").write_text(text[half:])
    dense = np.zeros((len(docs), len(names)), np.int64)
    for d, row in enumerate(ids):
        np.add.at(dense[d], row, 1)
    ldac = tmp_path / "c.ldac"
    ldac.write_text("".join(f"{np.count_nonzero(r)} " * 1 + " ".join(f"{w}:{r[w]}" for w in np.flatnonzero(r)) + "\n"
                            for r in dense).replace(" \n", "\n"))
    ragged = RaggedArray(np.concatenate(ids).astype(np.int32), np.concatenate(([0], np.cumsum([len(d) for d in ids]))))
    forms = {
        "text file": as_corpus(str(tmp_path / "c.txt")),
        "two files": as_corpus([tmp_path / "a.txt", tmp_path / "b.txt"]),
        "small chunks": as_corpus(str(tmp_path / "c.txt"), chunk_bytes=7),
        "TextBatch": as_corpus(TextBatch.from_strings(text.splitlines())),
        "generator": as_corpus(d for d in docs),
        "CSR": as_corpus(sp.csr_matrix(dense), vocabulary=names),
        "CSC": as_corpus(sp.csc_matrix(dense), vocabulary=names),
        "dense": as_corpus(dense, vocabulary=names),
        "float CSR": as_corpus(sp.csr_matrix(dense.astype(np.float64)), vocabulary=names),
        "RaggedArray": as_corpus(ragged, vocabulary=names),
        "id lists": as_corpus([d.tolist() for d in ids], vocabulary=names),
        "LDA-C": as_corpus(str(ldac), vocabulary=names),
        "vocabulary dict": as_corpus(docs, vocabulary={w: i for i, w in enumerate(names)}),
        "TokenCorpus": as_corpus(expected),
    }
    for name, got in forms.items():
        assert got == expected, name
        assert got.n_unknown == 0, name


def test_id_forms_without_vocabulary_name_their_columns():
    c = as_corpus(sp.csr_matrix(np.array([[0, 2, 0, 0], [1, 0, 0, 0]])))
    assert c.vocabulary == ["w0", "w1", "w2", "w3"] and c.words.tolist() == [1, 1, 0]
    r = as_corpus(RaggedArray(np.array([4, 0, 4], np.int64), np.array([0, 2, 2, 3])))
    assert r.n_words == 5 and r.words.tolist() == [4, 0, 4] and r.doc_offsets.tolist() == [0, 2, 2, 3]


def test_vocabulary_order_is_count_then_first_appearance():
    c = as_corpus([["b", "c", "a"], ["a", "d", "c"], ["e"]])
    assert c.vocabulary == ["c", "a", "b", "d", "e"]
    assert c.word_counts().tolist() == [2, 2, 1, 1, 1]


def test_pruning():
    docs = [["the", "cat", "sat", "the"], ["the", "dog", "sat"], ["the", "cat", "ran"], ["a", "cat"], []]
    assert as_corpus(docs, min_count=2).vocabulary == ["the", "cat", "sat"]
    # "the" is in 3 of 5 documents, "cat" in 3: both above 0.5 * 5
    pruned = as_corpus(docs, max_df=0.5)
    assert pruned.vocabulary == ["sat", "dog", "ran", "a"]
    assert pruned.doc_lengths.tolist() == [1, 2, 1, 1, 0]
    assert as_corpus(docs, stop_words={"the", "a"}, min_count=2).vocabulary == ["cat", "sat"]
    # the same on ids: kept ids renumbered in id order
    ids = as_corpus(docs)
    by_ids = as_corpus(ids.to_csr(), min_count=2)
    assert by_ids.vocabulary == ["w0", "w1", "w2"]
    named = as_corpus(TokenCorpus(ids.words, ids.doc_offsets, ids.vocabulary), stop_words={"the"}, max_df=0.5)
    assert named.vocabulary == ["sat", "dog", "ran", "a"]


def test_stop_words_from_a_file(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("the\n  a \n\n")
    assert as_corpus([["the", "a", "cat"]], stop_words=str(path)).vocabulary == ["cat"]


def test_document_frequency_in_chunks_is_the_same(monkeypatch):
    rng = np.random.default_rng(3)
    docs = [[f"w{i}" for i in rng.integers(0, 30, rng.integers(0, 40))] for _ in range(200)]
    whole = as_corpus(docs, max_df=0.3)
    monkeypatch.setattr(corpus_module, "DF_CHUNK_TOKENS", 17)
    assert as_corpus(docs, max_df=0.3) == whole
    full = as_corpus(docs)
    brute = [sum(w in set(d) for d in docs) for w in full.vocabulary]
    assert full.document_frequency().tolist() == brute


def test_a_given_vocabulary_drops_unknown_words(tmp_path):
    c = as_corpus([["a", "zz", "b"], ["zz"]], vocabulary=["b", "a"])
    assert c.words.tolist() == [1, 0] and c.doc_offsets.tolist() == [0, 2, 2] and c.n_unknown == 2
    ids = as_corpus(RaggedArray(np.array([0, 5, 1], np.int32), np.array([0, 3])), vocabulary=["x", "y"])
    assert ids.words.tolist() == [0, 1] and ids.n_unknown == 1
    other = as_corpus([["zz", "a"], ["b"]])  # a corpus with its own ids: matched by word
    moved = as_corpus(other, vocabulary=["b", "a"])
    assert moved.words.tolist() == [1, 0] and moved.doc_offsets.tolist() == [0, 1, 2] and moved.n_unknown == 1
    path = tmp_path / "v.tokens"
    path.write_text("b\na\n")
    assert as_corpus([["a", "b"]], vocabulary=str(path)).words.tolist() == [1, 0]


def test_segmented_raw_text(tmp_path):
    from gpu_text.segment import Dictionary, Segmenter

    seg = Segmenter(Dictionary(["英国", "英国人", "是", "他"], np.array([8, 10, 5, 6]), 30))
    lines = ["他是英国人", "", "英国人是"]
    (tmp_path / "zh.txt").write_text("".join(line + "\n" for line in lines))
    got = as_corpus(str(tmp_path / "zh.txt"), segment=seg)
    assert got == as_corpus([seg.cut(line) for line in lines])
    assert got.doc_lengths.tolist() == [3, 0, 2]


def test_reuters_ldac_equals_the_lda_package():
    lda = require("lda")
    folder = shared_data("lda-reuters")
    X = lda.utils.ldac2dtm(open(folder / "reuters.ldac"), offset=0)
    vocab = (folder / "reuters.tokens").read_text().split()
    c = as_corpus(str(folder / "reuters.ldac"), vocabulary=str(folder / "reuters.tokens"))
    assert (c.n_docs, c.n_words, c.n_tokens) == (395, 4258, int(X.sum()))
    assert c == as_corpus(sp.csr_matrix(X), vocabulary=vocab)
    assert (c.to_csr().toarray() == X).all()


def test_ldac_detection_and_bad_files(tmp_path):
    plain = tmp_path / "c.txt"
    plain.write_text("2 0:1 3:2\n0\n")
    assert is_ldac(plain) and is_ldac(tmp_path / "x.ldac.gz") and not is_ldac(tmp_path / "missing.txt")
    assert as_corpus(str(plain)).words.tolist() == [0, 3, 3]
    words = tmp_path / "w.txt"
    words.write_text("3 apples and pears\n")
    assert not is_ldac(words)
    for content, message in [("2 0:1\n", "expected 2 id:count pairs"), ("1 0:1\n\n1 2:1\n", ":2: empty line"),
                             ("x 0:1\n", "number of id:count pairs"), ("2 0:1 3:\n", "malformed"),
                             ("1 0:1:2\n", "expected 1 id:count pairs"), ("1 -1:2\n", "malformed")]:
        bad = tmp_path / "bad.ldac"
        bad.write_text(content)
        with pytest.raises(ValueError, match=message):
            read_ldac(bad)
    with pytest.raises(ValueError, match="cannot be mixed"):
        as_corpus([str(plain), str(words)])


def test_empty_inputs():
    for empty in ([], sp.csr_matrix((0, 3)), [[], []]):
        c = as_corpus(empty)
        assert c.n_tokens == 0
    assert as_corpus([[], []]).doc_offsets.tolist() == [0, 0, 0]
    assert as_corpus(sp.csr_matrix((2, 3))).n_words == 3


def test_helpers():
    c = as_corpus([[0, 1, 2, 3], [4], []], vocabulary=list("abcde"))
    first, second = c.split_halves()
    assert first.words.tolist() == [0, 1] and second.words.tolist() == [2, 3, 4]
    assert first.doc_offsets.tolist() == [0, 2, 2, 2] and second.doc_offsets.tolist() == [0, 2, 3, 3]
    assert c.documents(np.array([False, True, True])).words.tolist() == [4]
    assert c.doc_ids().tolist() == [0, 0, 0, 0, 1]
    assert as_corpus(c.to_csr(), vocabulary=c.vocabulary) == c


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(min_count=0), ValueError, "min_count"),
    (dict(max_df=0), ValueError, "max_df"),
    (dict(max_df=1.5), ValueError, "max_df"),
    (dict(vocabulary=["a"], min_count=2), ValueError, "fixes the words"),
    (dict(vocabulary={"a": 0, "b": 2}), ValueError, "ids 0..1"),
    (dict(vocabulary=["a", "a"]), ValueError, "distinct"),
    (dict(stop_words=3), TypeError, "stop_words"),
])
def test_bad_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        as_corpus([["a", "b"]], **kwargs)


def test_bad_inputs():
    with pytest.raises(TypeError, match="must be a scipy.sparse"):
        as_corpus(3)
    with pytest.raises(ValueError, match="non-negative integers"):
        as_corpus(sp.csr_matrix(np.array([[0.5, 1.0]])))
    with pytest.raises(ValueError, match="non-negative integers"):
        as_corpus(np.array([[-1, 2]]))
    with pytest.raises(ValueError, match="non-negative"):
        as_corpus([[0, -3]])
    with pytest.raises(TypeError, match="integer word ids"):
        as_corpus(RaggedArray(np.array([0.5]), np.array([0, 1])))
    with pytest.raises(TypeError, match="single string|tokens must be str"):
        as_corpus([["a", 3.5]])
    with pytest.raises(TypeError, match="not to ids"):
        as_corpus(RaggedArray(np.array([1], np.int32), np.array([0, 1])), segment=object())
    with pytest.raises(ValueError, match="word ids must lie"):
        TokenCorpus(np.array([2], np.int32), np.array([0, 1]), ["a"])
    with pytest.raises(ValueError, match="doc_offsets"):
        TokenCorpus(np.array([0], np.int32), np.array([0, 2]), ["a"])
