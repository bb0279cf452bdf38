"""Differential tests of cuda/ngram_count.cu: emulated CUDA (and the GPU when present) == Numba ==
reference; BytePiece training's n-gram tables the same on every backend."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.backend import cuda_unavailable_reason, get_backend
from tests.reference import ngram_count as reference
from tests.test_utf8_kernels import host


def backends():
    from tests.emulated_backend import emulated_backend

    found = [get_backend("cpu"), emulated_backend()]
    if cuda_unavailable_reason() is None:
        found.append(get_backend("cuda"))
    return found


def random_tokens(rng: np.random.Generator, count: int, gaps: bool):
    """Pre-tokens of random bytes (0 included); with ``gaps``, some bytes lie in no pre-token."""
    lengths = rng.integers(0, 12, count)
    skips = rng.integers(0, 3, count) if gaps else np.zeros(count, np.int64)
    starts = (np.cumsum(lengths + skips) - lengths)[:count]
    ends = starts + lengths
    data = rng.integers(0, 256, int(ends[-1]) + 2 if count else 0).astype(np.uint8)
    return data, starts.astype(np.int64), ends.astype(np.int64)


@pytest.mark.parametrize("seed,count,gaps", [(0, 0, False), (1, 1, False), (2, 300, False), (3, 300, True)])
def test_ngram_keys_equal_reference(seed, count, gaps):
    rng = np.random.default_rng(seed)
    data, starts, ends = random_tokens(rng, count, gaps)
    for n in range(1, 7):
        want = reference.ngram_keys(data, starts, ends, n)
        for be in backends():
            xp = be.xp
            got = be.op("ngram_count", "ngram_keys")(xp.asarray(data), xp.asarray(starts), xp.asarray(ends), n)
            np.testing.assert_array_equal(host(got), want, err_msg=f"{be.name} n={n}")


def test_one_thread_searches_log_steps():
    """No thread loops over a pre-token: each one takes about log2(pre-tokens) search steps."""
    from tests.emulated_backend import emulated_backend

    be = emulated_backend()
    data, starts, ends = random_tokens(np.random.default_rng(7), 1000, False)
    be.op("ngram_count", "ngram_keys")(data, starts, ends, 6)
    steps = be.runtime.module("ngram_count").get_function("ngram_keys").last_max_steps
    assert 1 <= steps <= 11, steps  # ceil(log2(1000)) = 10


def test_trainer_tables_equal_on_every_backend():
    """BytePiece's n-gram tables counted on the device (sort + run-length) == on the CPU."""
    from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

    lines = ["南京市长江大桥 the 1998 cat", "don't 🙂 é", "a,b a,b a,b"] * 20
    trainer = BytePieceTrainer(min_count=2, backend="cpu")
    data, starts, ends = trainer.pre_tokens(lines)
    want = BytePieceTrainer.count_ngrams(data, starts, ends)
    for be in backends()[1:]:
        got = BytePieceTrainer.count_ngrams(data, starts, ends, be)
        for (k1, c1), (k2, c2) in zip(want, got):
            assert k1.tolist() == k2.tolist() and c1.tolist() == c2.tolist(), be.name


@pytest.mark.parametrize("seed,min_count", [(0, 1), (1, 3)])
def test_byte_viterbi_starts_equal_reference(seed, min_count):
    """Pass 2's byte Viterbi on every backend == the reference, on words of every character length
    and malformed bytes (ties are common: small counts)."""
    from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

    rng = np.random.default_rng(seed)
    alphabet = ["南", "京", "a", "b", "é", "🙂", "1", "▁", "\x80", "\xe4"]
    words = [("".join(rng.choice(alphabet, int(rng.integers(1, 14))))).encode("utf-8", "surrogateescape")
             .replace(b"\xc2\x80", b"\x80").replace(b"\xc3\xa4", b"\xe4") for _ in range(300)]
    lengths = np.array([len(w) for w in words], np.int64)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    data = np.frombuffer(b"".join(words), np.uint8).copy()
    trainer = BytePieceTrainer(min_count=min_count)
    keys, values = trainer.prune_ngrams(trainer.count_ngrams(data, starts, ends))
    want = reference.byte_viterbi_starts(data, starts, ends, keys, values)
    for be in backends():
        xp = be.xp
        got = be.op("ngram_count", "byte_viterbi_starts")(xp.asarray(data), xp.asarray(starts), xp.asarray(ends),
                                                          xp.asarray(keys), xp.asarray(values))
        np.testing.assert_array_equal(host(got), want, err_msg=be.name)


def test_training_on_every_backend_gives_the_same_model(tmp_path):
    """The whole trainer with its kernels on each backend (n-gram keys, device sort, byte Viterbi):
    the same model file."""
    from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

    rng = np.random.default_rng(4)
    words = ["南京", "市长", "江", "大桥", "the", "cat", "1998", "é", "🙂", "a,b", "don't"]
    lines = [" ".join(rng.choice(words, int(rng.integers(0, 9)))) for _ in range(400)]
    files = []
    for be in backends():
        BytePieceTrainer(vocab_size=300, min_count=2, cpu_count=2, backend=be).train(lines).save_model_file(
            tmp_path / f"{len(files)}.model")
        files.append((tmp_path / f"{len(files)}.model").read_bytes())
    assert all(f == files[0] for f in files[1:])


def test_byte_viterbi_is_linear_in_the_pre_token():
    """One thread per pre-token, linear in its bytes: a 3000-byte pre-token costs its bytes times
    (the states' table searches), not more."""
    from tests.emulated_backend import emulated_backend
    from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

    be = emulated_backend()
    data = np.frombuffer(("南京市长江大桥" * 143).encode()[:3000], np.uint8).copy()
    starts, ends = np.array([0], np.int64), np.array([data.size], np.int64)
    keys, values = BytePieceTrainer(min_count=2).prune_ngrams(BytePieceTrainer.count_ngrams(data, starts, ends))
    be.op("ngram_count", "byte_viterbi_starts")(data, starts, ends, keys, values)
    steps = be.runtime.module("ngram_count").get_function("byte_viterbi_starts").last_max_steps
    searches = int(np.ceil(np.log2(keys.size))) + 1
    assert 3000 * 2 <= steps <= 3000 * (3 + 6 * searches), (steps, searches)
