"""Training throughput of word2vec and LDA on every available backend, with no peer installed.

The peers' benchmarks (``word2vec``, ``lda``) need gensim, tomotopy and the research corpora; the
device check's GPU machine has none of them, so this one measures gpu_text alone, as users call
it (``Word2Vec.fit``, ``LDA.fit``), on a synthetic Zipf corpus (word ``i`` drawn with weight
``1 / (i + 1)``, documents of 200 tokens, seed 1) given as ragged ids: the same corpus on every
backend. Reported per row: seconds, words (or tokens) per second, and the quality the run reached
(the LDA log-likelihood per token; word2vec's summed training loss), so speed and quality are read
together. On the GPU the corpus is 20M tokens (``--quick``: 2M), on the CPU 2M (``--quick``: 200k).

``python -m benchmarks training [--quick]``.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.harness import Config, Measurement, hardware, training_curve

DOC_TOKENS = 200
N_WORDS = 50_000


def zipf_corpus(n_tokens: int, seed: int = 1) -> Any:
    """A ``RaggedArray`` of ``n_tokens`` Zipf-distributed word ids in documents of 200 tokens.

    >>> zipf_corpus(450).offsets.tolist()
    [0, 200, 400, 450]
    """
    from gpu_text.ragged import RaggedArray

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, N_WORDS + 1)
    words = rng.choice(N_WORDS, n_tokens, p=weights / weights.sum()).astype(np.int32)
    offsets = np.arange(0, n_tokens + 1, DOC_TOKENS, dtype=np.int64)
    if offsets[-1] != n_tokens:
        offsets = np.append(offsets, n_tokens)
    return RaggedArray(words, offsets)


def _word2vec_rows(corpus: Any, backend: str, label: str, epochs: int) -> list[Measurement]:
    from gpu_text.word2vec import Word2Vec

    rows = []
    n = int(corpus.values.size)
    for name, settings in {"cbow-hs": dict(sg=0, hs=1, negative=0), "sg-ns": dict(sg=1, hs=0, negative=5)}.items():
        Word2Vec(vector_size=100, epochs=1, backend=backend, **settings).fit(zipf_corpus(20_000))  # compiles
        model = Word2Vec(vector_size=100, epochs=epochs, compute_loss=True, backend=backend, **settings)
        tick = time.perf_counter()
        model.fit(corpus)
        seconds = time.perf_counter() - tick
        rows.append(Measurement("training", f"zipf {n:,} tokens", f"gpu_text[{backend}] word2vec {name}", label,
                                [seconds], n * epochs, None,
                                f"{n * epochs / seconds:,.0f} words/s incl. vocabulary; loss {model.loss_:.4g}",
                                extra={"curves": [training_curve(f"gpu_text[{backend}] word2vec {name}", "epoch",
                                                                 "summed training loss",
                                                                 [(h["epoch"], h["loss"]) for h in model.history_])]}))
    return rows


def _lda_rows(corpus: Any, backend: str, label: str, sweeps: int) -> list[Measurement]:
    from gpu_text.lda import LDA

    rows = []
    n = int(corpus.values.size)
    samplers = ["auto"] if backend == "cpu" else ["dense", "mh"]
    for k in (100, 1024):
        for sampler in samplers:
            params = dict(n_topics=k, sampler=sampler, seed=1, backend=backend)
            LDA(n_iter=2, eval_every=2, **params).fit(zipf_corpus(20_000))  # compiles
            model = LDA(n_iter=sweeps, eval_every=sweeps, **params)
            tick = time.perf_counter()
            model.fit(corpus)
            seconds = time.perf_counter() - tick
            ll = model.loglikelihood_[-1][1]
            rows.append(Measurement("training", f"zipf {n:,} tokens", f"gpu_text[{backend}] lda K={k} "
                                    f"{model.sampler_}/{model.schedule_}", label, [seconds], n * sweeps, None,
                                    f"{n * sweeps / seconds:,.0f} tokens/s; ll/token after {sweeps} sweeps {ll:.4f}"))
    return rows


def run(config: Config) -> list[Measurement]:
    """The harness entry: word2vec and LDA rows for the CPU and, when present, the GPU."""
    import numba

    from gpu_text.backend import cuda_unavailable_reason

    rows: list[Measurement] = []
    gpu = cuda_unavailable_reason() is None
    for backend in (["cuda"] if gpu else []) + ["cpu"]:
        if backend == "cuda":
            n_tokens, epochs, sweeps, label = (2_000_000 if config.quick else 20_000_000), 1, 5, hardware().get("gpu")
        else:
            n_tokens, epochs, sweeps, label = (200_000 if config.quick else 2_000_000), 1, 5, numba.get_num_threads()
        corpus = zipf_corpus(n_tokens)
        rows += _word2vec_rows(corpus, backend, str(label), epochs)
        rows += _lda_rows(corpus, backend, str(label), sweeps)
        if gpu and config.quick:
            break  # the device check's minutes go to the GPU rows
    return rows
