"""The crf_features kernels (emulated CUDA, and the GPU when present, == Numba == reference,
exactly) on random rows, commands and tables, and on real models: their ids are the ids
``FeatureSpace.encode_columns`` finds, their labels the ``crf.viterbi`` op's over those; and the
segment path built on them (``CRF.segment``, ``CRF.segment_text``, ``gpu-text crf segment``)."""
from __future__ import annotations

import numpy as np
import pytest

from cpu_fallback import crf_features as numba_features
from gpu_text.backend import get_backend
from gpu_text.crf import CRF
from gpu_text.crf.features import DENSE, HASHED, FeatureSpace, slot_region
from gpu_text.crf.patterns import parse_patterns
from gpu_text.crf.segmentation import SegmentationFeatures, joined_words
from gpu_text.crf.segmenter import fit_segmenter
from tests.reference import crf_features as reference
from tests.test_utf8_kernels import host

TRAIN = ["１９９８年 １２月 ３１日 ， 南京 市长 江 大桥", "他 是 英国 人 Tom ， 编号 123", "长江 大桥 很 长",
         "今天 是 1998年 1月 1日 。", "北京 大学 的 学生 ， 上海 的 老师"] * 3


def random_problem(seed: int, n_seqs: int = 12, max_len: int = 9, n_labels: int = 4):
    """Random values, edges, rows (unigram first, dense and hashed, exact and not), commands,
    tables holding about half of the keys that occur, and weights."""
    rng = np.random.default_rng(seed)
    n_columns, n_values = int(rng.integers(1, 4)), int(rng.integers(2, 7))
    lengths = rng.integers(0, max_len + 1, n_seqs)
    seq_offsets = np.zeros(n_seqs + 1, np.int64)
    np.cumsum(lengths, out=seq_offsets[1:])
    n = int(seq_offsets[-1])
    values = rng.integers(-1, n_values, (n_columns, n)).astype(np.int32)
    values[values < 0] = rng.integers(-1, n_values, int((values < 0).sum()))  # fewer unknowns
    edges = rng.integers(-1, n_values, (n_columns, 10)).astype(np.int32)
    specs, commands = [], []
    n_patterns = int(rng.integers(1, 6))
    for p in range(n_patterns):
        count = int(rng.integers(0, 4))
        first = len(commands)
        for _ in range(count):
            commands.append((int(rng.integers(0, n_columns)), int(rng.integers(-3, 4)), int(rng.random() < 0.2)))
        kind = int(rng.choice([1, 2, 3]))
        specs.append((kind, p, int(rng.random() < 0.6), first, count))
    commands = np.array(commands, np.int64).reshape(-1, 3)
    n_namespaces = n_patterns
    rows, slots, dense, n_slots, n_dense, next_id = [], [np.zeros((0, 2), np.int64)], [np.zeros(0, np.int64)], 0, 0, 0
    for kind in (1, 2):
        for spec in specs:
            if not spec[0] & kind:
                continue
            row = [kind, spec[1], spec[2], spec[3], spec[4]]
            # the keys this row makes somewhere, half of them known
            keys = set()
            for s in range(n_seqs):
                start, end = int(seq_offsets[s]), int(seq_offsets[s + 1])
                for local in range(end - start):
                    parts = [reference._value(values, edges, commands[c], start, end - start, local)
                             for c in range(spec[3], spec[3] + spec[4])]
                    if all(v >= 0 for v in parts):
                        keys.add(reference._key(parts, spec[1], spec[2], n_values, n_namespaces))
            keys = np.array(sorted(k for k in keys if rng.random() < 0.6), np.int64)
            ids = next_id + rng.permutation(keys.size)
            next_id += keys.size
            if spec[4] == 1 and spec[2] and rng.random() < 0.5:
                table = np.full(n_values, -1, np.int64)
                table[(keys - spec[1]) // n_namespaces] = ids
                rows.append(row + [DENSE, n_dense, n_values])
                dense.append(table)
                n_dense += n_values
            else:
                bits, region = slot_region(keys, ids)
                rows.append(row + [HASHED, n_slots, bits])
                slots.append(region)
                n_slots += region.shape[0]
    rows = np.array(rows, np.int64).reshape(-1, 8)
    tables = (edges, rows, commands, np.concatenate(slots), np.concatenate(dense), n_values, n_namespaces)
    unigram = rng.normal(size=(max(next_id, 1), n_labels))
    bigram = rng.normal(size=(max(next_id, 1), n_labels, n_labels))
    return unigram, bigram, seq_offsets, values, tables


def run(backend, name, *args):
    if backend in (numba_features, reference):
        return getattr(backend, name)(*args)
    out = backend.op("crf_features", name)(*(backend.asarray(a) if isinstance(a, np.ndarray) else a for a in args))
    return tuple(host(x) for x in out) if isinstance(out, tuple) else host(out)


@pytest.mark.parametrize("seed", range(12))
def test_feature_ids_match(backend, seed):
    _, _, seq_offsets, values, tables = random_problem(seed)
    want = reference.feature_ids(seq_offsets, values, *tables)
    np.testing.assert_array_equal(run(numba_features, "feature_ids", seq_offsets, values, *tables), want)
    np.testing.assert_array_equal(run(backend, "feature_ids", seq_offsets, values, *tables), want)


@pytest.mark.parametrize("seed", range(12))
def test_segment_viterbi_matches(backend, seed):
    unigram, bigram, seq_offsets, values, tables = random_problem(seed, n_labels=int(1 + seed % 5))
    want_labels, want_scores = reference.segment_viterbi(unigram, bigram, seq_offsets, values, *tables)
    for twin in (numba_features, backend):
        labels, scores = run(twin, "segment_viterbi", unigram, bigram, seq_offsets, values, *tables)
        assert labels.dtype == np.int32
        np.testing.assert_array_equal(labels, want_labels)
        np.testing.assert_array_equal(scores, want_scores)


def test_ties_go_to_the_lowest_label(backend):
    unigram, bigram, seq_offsets, values, tables = random_problem(3)
    unigram, bigram = np.zeros_like(unigram), np.zeros_like(bigram)
    labels, scores = run(backend, "segment_viterbi", unigram, bigram, seq_offsets, values, *tables)
    assert (labels == 0).all() and (scores == 0).all()


def test_bad_arguments_are_refused(backend):
    _, _, seq_offsets, values, tables = random_problem(1)
    edges, rows, commands, slots, dense, n_values, n_namespaces = tables
    with pytest.raises(ValueError, match="values must be"):
        run(backend, "feature_ids", seq_offsets, values[:, :-1], *tables)
    broken = rows.copy()
    broken[0, 6] = 10 ** 9
    with pytest.raises(ValueError, match="out of range"):
        run(backend, "feature_ids", seq_offsets, values, edges, broken, commands, slots, dense, n_values, n_namespaces)


def test_slot_region_places_every_key_where_probing_finds_it():
    rng = np.random.default_rng(0)
    keys = np.unique(rng.integers(0, 1 << 40, 3000))
    bits, slots = slot_region(keys, np.arange(keys.size))
    assert slots.shape[0] == 1 << bits and (slots[:, 0] == -1).sum() >= keys.size  # half empty at most
    mask = (1 << bits) - 1
    for i, key in enumerate(keys.tolist()[:400]):
        slot = ((key * 0xD6E8FEB86659FD93) & reference.MASK) >> (64 - bits)
        while slots[slot, 0] != key:
            assert slots[slot, 0] != -1
            slot = (slot + 1) & mask
        assert slots[slot, 1] == i


def _segmenter(pattern=None, columns=("fold", "class")):
    return fit_segmenter(TRAIN, features=SegmentationFeatures(columns), pattern=pattern, rho1=0.0, backend="cpu",
                         max_iterations=15)


PATTERNS = [None, "u:%x[0,0]\nu:%x[1,0]\n*:%X[-1,0]/%x[2,1]\nU:%t[0,0,\"^[0-9]$\"]\nu:%m[@0,1,\"[A-Z]\"]\nb:%x[0,1]\nB"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_ids_are_encode_columns_ids_and_labels_the_viterbi_ops(backend, pattern):
    crf = _segmenter(pattern)
    texts = ["1998年12月31日，南京市长江大桥", "ＴＯＭ是英国人，编号１２３。", "未见过的字龘", "a", "长江"]
    encoder = crf.space_.encoder()
    lengths = np.array([len(t) for t in texts])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), np.uint32)
    values = crf.segmentation_.value_ids(encoder, texts, codes)
    ids = run(backend, "feature_ids", offsets, values, *encoder.arrays(np))
    columns, _ = crf.segmentation_.columns_of(texts)
    data = crf.space_.encode_columns(columns, offsets)
    n_u = int((encoder.rows[:, 0] == 1).sum())
    for name, part in (("u", ids[:, :n_u]), ("b", ids[:, n_u:])):
        found = part >= 0
        np.testing.assert_array_equal(np.concatenate([[0], np.cumsum(found.sum(axis=1))]), getattr(data, f"{name}_offsets"))
        np.testing.assert_array_equal(part[found], getattr(data, f"{name}_ids"))
    labels, scores = run(backend, "segment_viterbi", crf.unigram_weights_, crf.bigram_weights_, offsets, values,
                         *encoder.arrays(np))
    want, want_scores = get_backend("cpu").op("crf", "viterbi")(
        crf.unigram_weights_, crf.bigram_weights_, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets,
        data.b_ids)
    np.testing.assert_array_equal(labels, want)
    np.testing.assert_array_equal(scores, want_scores)


def test_a_model_file_encodes_as_the_fitted_model(tmp_path):
    crf = _segmenter()
    crf.save(str(tmp_path / "m.crf"))
    loaded = CRF.load(str(tmp_path / "m.crf"), backend="cpu")
    texts = ["1998年12月31日，南京市长江大桥", "他是英国人Tom"]
    assert loaded.segment(texts) == crf.segment(texts)
    assert loaded.segment_text(texts) == crf.segment_text(texts)


def test_segment_text_is_the_words_joined_line_by_line():
    crf = _segmenter()
    rng = np.random.default_rng(4)
    alphabet = list("南京市长江大桥１９９８年月日，。Tom123 \t\u3000")
    texts = ["".join(rng.choice(alphabet, int(rng.integers(0, 20)))) for _ in range(60)] + ["", " ", "  \t "]
    want = "".join(" ".join(row) + "\n" for row in crf.segment(texts))
    assert crf.segment_text(texts) == want
    assert want.count("\n") == len(texts)
    assert crf.segment_text([]) == "" and crf.segment([]) == []


def test_joined_words_keeps_empty_texts():
    codes = np.frombuffer("ab".encode("utf-32-le"), np.uint32)
    assert joined_words(codes, np.array([1, 1], bool), np.array([0, 0, 2, 2])) == "\na b\n\n"
    assert joined_words(np.zeros(0, np.uint32), np.zeros(0, bool), np.array([0, 0])) == "\n"


def test_char_models_and_dictionary_columns_segment_as_before():
    """A raw-character model (no segmentation_) and one with the dictionary columns: segment()
    equals the words of predict() over the same tokens (the path without the fused kernel)."""
    from gpu_text.crf.data import bmes_to_words, read_segmented_bmes

    X, y = read_segmented_bmes(TRAIN)
    raw = CRF(rho1=0.0, backend="cpu", max_iterations=10).fit(X, y)
    texts = ["南京市长江大桥", "他是英国人Tom 编号123", ""]
    pieces = [p for t in texts for p in t.split()]
    want = [bmes_to_words(list(p), tags) for p, tags in zip(pieces, raw.predict([list(p) for p in pieces]))]
    assert [w for row in raw.segment(texts) for w in row] == [w for row in want for w in row]
    features = SegmentationFeatures.with_dictionary(["南京", "长江", "大桥", "英国"])
    lexical = fit_segmenter(TRAIN, features=features, rho1=0.0, backend="cpu", max_iterations=10)
    tags = lexical.predict(features.tokens(pieces))
    assert [w for row in lexical.segment(texts) for w in row] == [
        w for p, t in zip(pieces, tags) for w in bmes_to_words(list(p), t)]


def test_cli_streams_keeps_every_line_and_reports_speed(tmp_path, monkeypatch):
    import gpu_text.crf.commands as commands
    from gpu_text.cli import main

    monkeypatch.setattr(commands, "SEGMENT_CHARACTERS", 64)  # many labelling calls per chunk

    crf = _segmenter()
    crf.save(str(tmp_path / "m.crf"))
    lines = ["1998年12月31日，南京市长江大桥", "", "  ", "他是英国人Tom", "", "长江 大桥"] * 50
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["crf", "segment", "--backend", "cpu", "--model", str(tmp_path / "m.crf"),
                     str(tmp_path / "in.txt"), str(tmp_path / "out.txt")]) == 0
    out = (tmp_path / "out.txt").read_text(encoding="utf-8")
    assert out == crf.segment_text(lines)
    assert out.split("\n")[:-1][1] == "" and len(out.split("\n")) == len(lines) + 1
    assert "characters/s" in err.getvalue() and f"segmented {len(lines)} lines" in err.getvalue()
