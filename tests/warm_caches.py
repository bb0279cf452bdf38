"""Fill the Numba and CUDA-emulator build caches once, before the test processes start.

``python -m tests.warm_caches`` (``make test`` runs it first). On a fresh checkout the caches are
empty: without this step the two pytest workers and the CLI tests' subprocesses would each compile
the same jitted functions and emulated kernels at the same time (minutes of duplicated work, and
CLI tests waiting on a compile). Numba's cache (``$NUMBA_CACHE_DIR``) and the emulator's
(``$GPU_TEXT_EMU_CACHE``) are shared on disk, so every later process loads what this one built.
The Numba warm-up and the emulator builds run in two processes, one per core.

Nothing here asserts: the tests do. A warm-up step that fails is reported and skipped, so a broken
API shows up in its tests, not here.
"""
from __future__ import annotations

import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "gpu_text" / "data" / "samples"
MODEL = REPO / "gpu_text" / "data" / "models" / "sample-bpe-4k.txt"
TEXTS = ["Hello, World! don't 12ab", "你好，世界。南京市长江大桥", "", "\xff bad ☃ 😀 " * 3]


def _utf8_and_tries() -> None:
    from gpu_text import utf8
    from gpu_text.trie import DoubleArrayTrie

    for op in (utf8.decode, utf8.validate, utf8.char_length, utf8.char_classes):
        op(TEXTS, backend="cpu")
    utf8.encode(utf8.decode(TEXTS, backend="cpu").codepoints, backend="cpu")
    trie = DoubleArrayTrie.build(["he", "she", "南京"])
    trie.lookup_batch(TEXTS, "cpu"), trie.longest_prefix_batch(TEXTS, "cpu"), trie.prefix_search(TEXTS, "cpu")
    trie.lookup("he"), trie.common_prefixes("shed"), trie.predictive("s")


def _tokenizers() -> None:
    from gpu_text.tokenizer import BPETrainer, Normalizer, PreTokenizer, Tokenizer

    tokenizer = Tokenizer.from_model_file(MODEL)
    for offsets in (False, True):
        tokenizer.encode(TEXTS, backend="cpu", with_offsets=offsets)
    tokenizer.decode_batch(tokenizer.encode(TEXTS, backend="cpu").ids)
    for rule in ("NFKC", "NMT_NFKC_CF"):
        Normalizer(rule).normalize(TEXTS, "cpu")
    PreTokenizer(split="isolate", digits="split", cn="char").pre_tokenize(TEXTS, "cpu")
    trainer = BPETrainer(vocab_size=400, character_coverage=1.0, extra_tokens=["<mask>"], progress=False)
    trained = trainer.fit_texts((SAMPLES / "en-kjv.txt").read_text(encoding="utf-8").splitlines()[:200])
    trained.tokenizer_.encode(TEXTS + ["a <mask> b"], backend="cpu", with_offsets=True)


def _segmenters() -> None:
    import numpy as np

    from gpu_text.segment import Dictionary, Segmenter

    dictionary = Dictionary(["南京", "南京市", "市长", "长江", "大桥", "江"], np.array([5, 3, 2, 4, 6, 1]), 40)
    for compat in (None, "jieba"):
        Segmenter(dictionary, compat=compat).segment(TEXTS, backend="cpu")


def _crf() -> None:
    from gpu_text.crf import CRF

    X = [["a", "b", "a"], ["b", "b"], ["a"]] * 3
    y = [["A", "B", "A"], ["B", "B"], ["A"]] * 3
    for rho1, algorithm in ((0.0, "auto"), (0.1, "auto"), (0.1, "sgd-l1")):
        crf = CRF(pattern="u:%x[0,0]\nb", rho1=rho1, algorithm=algorithm, max_iterations=3, backend="cpu").fit(X, y)
        crf.predict_marginals(X)


def _word2vec() -> None:
    from gpu_text.word2vec import Word2Vec

    corpus = [line.lower().split() for line in (SAMPLES / "en-kjv.txt").read_text(encoding="utf-8").splitlines()[:200]]
    for sg, hs, negative in ((0, 1, 0), (1, 0, 5)):
        model = Word2Vec(vector_size=8, min_count=1, sg=sg, hs=hs, negative=negative, epochs=1, backend="cpu")
        model.fit(corpus).wv_.most_similar("the", topn=2)


def _lda() -> None:
    from gpu_text.lda import LDA

    docs = [line.lower().split() for line in (SAMPLES / "en-kjv.txt").read_text(encoding="utf-8").splitlines()[:100]]
    for n_topics, sampler in ((3, "dense"), (60, "sparse"), (60, "mh")):
        model = LDA(n_topics=n_topics, n_iter=2, eval_every=1, sampler=sampler, backend="cpu").fit(docs)
        model.transform(docs[:5], n_iter=2)
        model.perplexity(docs[:5])


def _commands() -> None:
    """What every ``gpu-text`` command compiles (the CLI tests run them, some in subprocesses)."""
    from gpu_text.cli import main
    from gpu_text.warmup import warmup

    warmup(main, backend="cpu")


NUMBA_STEPS: list[Callable[[], None]] = [_utf8_and_tries, _tokenizers, _segmenters, _crf, _word2vec, _lda, _commands]


def warm_numba() -> None:
    for step in NUMBA_STEPS:
        _run(step.__name__.strip("_"), step)


def warm_emulator() -> None:
    from gpu_text.kernel_sources import kernel_families
    from tests.emulated_backend import EmulatedRuntime

    runtime = EmulatedRuntime()
    for family in kernel_families():
        _run(f"emulated {family}.cu", lambda: runtime.module(family))


def _run(name: str, step: Callable[[], object]) -> None:
    start = time.perf_counter()
    try:
        step()
    except Exception:  # the step's own tests will say what is wrong
        print(f"warm-up {name}: failed, left to the tests\n{traceback.format_exc(limit=3)}", file=sys.stderr)
        return
    print(f"warm-up {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)


def main(argv: list[str]) -> int:
    if argv == ["--emulator"]:
        warm_emulator()
        return 0
    emulator = subprocess.Popen([sys.executable, "-m", "tests.warm_caches", "--emulator"], cwd=REPO)
    warm_numba()
    emulator.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
