"""Unigram sampling and n-best: the empirical distribution of sampled segmentations against the
exact probabilities (every segmentation enumerated), and against sentencepiece's own sampler;
seeds repeat; nbest_size 0/1 is the best path; n-best lists equal sentencepiece's."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from gpu_text.tokenizer import Normalizer, PreTokenizer, Unigram, UnigramModel
from tests.conftest import require
from tests.test_unigram import hand_model

PIECES = [("<unk>", 0.0, 2), ("t", -3.0, 1), ("h", -3.5, 1), ("e", -2.5, 1), ("th", -4.0, 1), ("he", -4.2, 1),
          ("the", -5.0, 1), ("a", -2.0, 1), ("ea", -3.3, 1), ("tea", -6.5, 1)]
TEXT = "theat"


def tokenizer() -> Unigram:
    model = UnigramModel(*zip(*[(p, s, k) for p, s, k in PIECES]))
    return Unigram(model, Normalizer("no", add_dummy_prefix=False), PreTokenizer("none"))


def segmentations(text: str) -> dict[tuple[int, ...], float]:
    """Every segmentation of ``text`` into pieces (a character without a piece: unknown, score
    min - 10) and its score, by brute force."""
    index = {p: (i, s) for i, (p, s, k) in enumerate(PIECES) if k == 1}
    unk = min(s for _, s, k in PIECES if k == 1) - 10.0
    out: dict[tuple[int, ...], float] = {}

    def walk(rest: str, ids: tuple[int, ...], score: float) -> None:
        if not rest:
            out[ids] = score
            return
        for n in range(1, len(rest) + 1):
            if rest[:n] in index:
                walk(rest[n:], ids + (index[rest[:n]][0],), score + index[rest[:n]][1])
            elif n == 1:
                walk(rest[1:], ids + (0,), score + unk)

    walk(text, (), 0.0)
    return out


def exact(alpha: float, nbest: int | None = None) -> dict[tuple[int, ...], float]:
    scores = sorted(segmentations(TEXT).items(), key=lambda item: -item[1])[:nbest]
    weights = {ids: math.exp(alpha * s) for ids, s in scores}
    total = sum(weights.values())
    return {ids: w / total for ids, w in weights.items()}


def assert_close(samples: list[tuple[int, ...]], probs: dict[tuple[int, ...], float]) -> None:
    counts, n = Counter(samples), len(samples)
    assert set(counts) <= set(probs), set(counts) - set(probs)
    for ids, p in probs.items():
        # 5 standard deviations (and a little for rare ones): fails only on a wrong distribution
        assert abs(counts[ids] / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 2 / n, (ids, counts[ids] / n, p)


@pytest.mark.parametrize("alpha,nbest", [(0.5, -1), (1.0, -1), (0.2, 3), (1.0, 6)])
def test_sampled_frequencies_match_exact_probabilities(alpha, nbest):
    tok = tokenizer()
    rows = tok.encode([TEXT] * 4000, enable_sampling=True, alpha=alpha, nbest_size=nbest, seed=7).ids.to_pylist()
    assert_close([tuple(r) for r in rows], exact(alpha, None if nbest < 0 else nbest))


def test_sentencepiece_samples_the_same_distribution(tmp_path):
    """The exact probabilities are sentencepiece's too: its own sampler on the same model."""
    spm = require("sentencepiece")
    blob = hand_model(PIECES)
    sp = spm.SentencePieceProcessor(model_proto=blob)
    spm.set_random_generator_seed(11)
    for alpha, nbest in ((0.5, -1), (0.2, 3)):
        rows = [tuple(sp.encode(TEXT, enable_sampling=True, alpha=alpha, nbest_size=nbest)) for _ in range(3000)]
        assert_close(rows, exact(alpha, None if nbest < 0 else nbest))
    path = tmp_path / "m.model"
    path.write_bytes(blob)
    assert [tuple(r) for r in Unigram.from_sentencepiece(path).nbest(TEXT, 6)] == \
        [tuple(r) for r in sp.nbest_encode_as_ids(TEXT, 6)]


def test_seeds_repeat_and_best_path_without_sampling():
    tok = tokenizer()
    texts = [TEXT, "tea the at", "", "hhh"] * 50
    first = tok.encode(texts, enable_sampling=True, alpha=0.3, seed=5).ids.to_pylist()
    assert first == tok.encode(texts, enable_sampling=True, alpha=0.3, seed=5).ids.to_pylist()
    assert first != tok.encode(texts, enable_sampling=True, alpha=0.3, seed=6).ids.to_pylist()
    best = tok.encode(texts).ids.to_pylist()
    for n in (0, 1):
        assert tok.encode(texts, enable_sampling=True, nbest_size=n, seed=1).ids.to_pylist() == best
    # a very low temperature: the best path (its score is 0.7 above the next)
    assert tok.encode([TEXT] * 20, enable_sampling=True, alpha=200.0, seed=2).ids.to_pylist() == best[:1] * 20
    assert tok.nbest(TEXT, 1) == best[:1]


def test_sampling_keeps_offsets_and_unknown_rules():
    tok = tokenizer()
    e = tok.encode(["xxthe", "the"], enable_sampling=True, alpha=0.1, seed=3, with_offsets=True, backend="cpu")
    ids, starts, ends = e.ids.to_pylist(), e.starts.to_pylist(), e.ends.to_pylist()
    assert ids[0][0] == 0 and starts[0][:2] == [0, 2]  # the run "xx" is one unknown id
    for row_starts, row_ends, n in zip(starts, ends, (5, 3)):
        assert row_starts[0] == 0 and row_ends[-1] == n and row_starts[1:] == row_ends[:-1]


def test_nbest_equals_sentencepiece_on_a_trained_model(tmp_path):
    spm = require("sentencepiece")
    import io

    from tests.test_unigram import sample_lines

    blob = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sample_lines()[:800]), model_writer=blob,
                                   model_type="unigram", vocab_size=800, minloglevel=2, num_threads=2,
                                   hard_vocab_limit=False, character_coverage=0.98)
    path = tmp_path / "m.model"
    path.write_bytes(blob.getvalue())
    sp, tok = spm.SentencePieceProcessor(model_file=str(path)), Unigram.from_sentencepiece(path)
    for text in ("And God said", "the LORD", "宝玉笑道", "unto them"):
        want = sp.nbest_encode_as_ids(text, 8)
        got = tok.nbest(text, 8)
        assert got[0] == sp.encode(text) == tok.encode([text]).ids.to_pylist()[0]
        assert sorted(map(tuple, got)) == sorted(map(tuple, want)), text


def test_bad_arguments_are_clear():
    tok = tokenizer()
    with pytest.raises(ValueError, match="n must be at least 1"):
        tok.nbest(TEXT, 0)
    assert np.all(np.isfinite(tok.model.weights[1:]))
