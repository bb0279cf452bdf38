"""Launch wrappers of ``cuda/lda.cu``; the Numba twins are in ``cpu_fallback/lda.py``.

Tokens are flat and document-major (``words``, ``doc_offsets``), counts are int32 ``n_dk[D, K]``,
``n_wk[V, K]``, ``n_k[K]``. Every kernel walks its items with a grid-stride loop and draws from
the counter-based stream keyed by (key, token), so results do not depend on the grid:
``max_blocks`` only changes how the work is shared out (the tests vary it).

Samplers: :func:`sample_dense` (O(K) per token; schedules 0 sequential, 1 jacobi, 2 jacobi with
a warp per token) and :func:`sample_mh` (Metropolis-Hastings with WarpLDA's doc and word
proposals, O(1) per token: the large-K path); :func:`fold_in` for transform (a warp per
document, the model's counts fixed). Launches per jacobi sweep: two (the sampler, then
``lda_apply_changes``, which moves the counts of the tokens whose topic changed with integer
atomics: exact, no zeroing of the D x K and V x K tables; ``sample_mh`` adds the K-step
``lda_alpha_cum``), no host sync. Device memory per token: words 4 B, topics 4 B, the new-topic
scratch 4 B, and for ``sample_mh`` the word-major index 4 B (plus ``doc_offsets`` per document and
the count tables). Token indices are int32 in that index: fewer than 2**31 tokens.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpu_text.cuda_ops import BLOCK, KernelRuntime, blocks_for, i64, launch

WARPS = BLOCK // 32
SEQUENTIAL, JACOBI, JACOBI_WARP = 0, 1, 2
# Topic totals are aggregated per block in shared memory up to this many topics (48 KiB of ints).
SHARED_TOPICS = 48 * 1024 // 4
# Blocks of the counting kernels: enough to fill an H200 several times over while each block's
# shared topic totals are flushed once for many tiles of tokens.
COUNT_BLOCKS = 2048
# Tokens per warp in the warp-parallel sampler (schedule 2): short units keep every warp busy.
WARP_UNIT = 8


def _check(**arrays: tuple[Any, Any]) -> None:
    """Kernels take raw pointers: a wrong dtype or a strided view would be read as garbage."""
    for name, (array, dtype) in arrays.items():
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise TypeError(f"{name} must be a C-contiguous {np.dtype(dtype).name} array "
                            f"(got {array.dtype}{'' if array.flags.c_contiguous else ', not contiguous'})")


def _check_state(words: Any, doc_offsets: Any, topics: Any, n_dk: Any, n_wk: Any, n_k: Any) -> None:
    _check(words=(words, np.int32), doc_offsets=(doc_offsets, np.int64), topics=(topics, np.int32),
           n_dk=(n_dk, np.int32), n_wk=(n_wk, np.int32), n_k=(n_k, np.int32))
    if int(topics.size) != int(words.size):
        raise ValueError(f"{topics.size} topics for {words.size} tokens")


def _grid(n_blocks: int, max_blocks: int | None) -> int:
    return n_blocks if max_blocks is None else min(n_blocks, max(1, int(max_blocks)))


def _nk_shared(n_topics: int) -> tuple[np.int32, int]:
    """(block_nk flag, dynamic shared bytes) of the counting kernels."""
    if n_topics <= SHARED_TOPICS:
        return np.int32(1), 4 * n_topics
    return np.int32(0), 0


def init_topics(rt: KernelRuntime, n_tokens: int, n_topics: int, key: int, *, max_blocks: int | None = None) -> Any:
    """int32 initial topic of every token: ``draw(key, i, 0) % n_topics``.

    >>> from gpu_text.backend import get_backend
    >>> init_topics(get_backend("cuda").runtime, 5, 3, 7).get()  # doctest: +SKIP
    array([...], dtype=int32)
    """
    xp = rt.xp
    if n_topics < 1:
        raise ValueError(f"n_topics must be at least 1 (got {n_topics})")
    topics = xp.empty(int(n_tokens), xp.int32)
    launch(rt.function("lda", "lda_init_topics"), _grid(blocks_for(int(n_tokens), BLOCK), max_blocks),
           (i64(n_tokens), np.int32(n_topics), np.uint64(key), topics))
    return topics


def _count_into(rt: KernelRuntime, words: Any, doc_offsets: Any, topics: Any, n_dk: Any, n_wk: Any, n_k: Any,
                max_blocks: int | None) -> None:
    n_topics = int(n_k.size)
    flag, shared = _nk_shared(n_topics)
    n = int(words.size)
    launch(rt.function("lda", "lda_count"), _grid(min(blocks_for(n, BLOCK), COUNT_BLOCKS), max_blocks),
           (words, doc_offsets, i64(doc_offsets.size - 1), topics, i64(n), np.int32(n_topics), n_dk, n_wk, n_k, flag),
           shared_mem=shared)


def count_topics(rt: KernelRuntime, words: Any, doc_offsets: Any, topics: Any, n_words: int, n_topics: int, *,
                 max_blocks: int | None = None) -> tuple[Any, Any, Any]:
    """``(n_dk[D, K], n_wk[V, K], n_k[K])`` int32 rebuilt exactly from the topics (integer atomics).

    >>> from gpu_text.backend import get_backend
    >>> rt = get_backend("cuda").runtime  # doctest: +SKIP
    >>> xp = rt.xp  # doctest: +SKIP
    >>> count_topics(rt, xp.array([0, 1], xp.int32), xp.array([0, 2]), xp.array([1, 1], xp.int32), 2, 2)[2]
    ... # doctest: +SKIP
    array([0, 2], dtype=int32)
    """
    xp = rt.xp
    _check(words=(words, np.int32), doc_offsets=(doc_offsets, np.int64), topics=(topics, np.int32))
    n_dk = xp.zeros((int(doc_offsets.size) - 1, int(n_topics)), xp.int32)
    n_wk = xp.zeros((int(n_words), int(n_topics)), xp.int32)
    n_k = xp.zeros(int(n_topics), xp.int32)
    _count_into(rt, words, doc_offsets, topics, n_dk, n_wk, n_k, max_blocks)
    return n_dk, n_wk, n_k


def sample_dense(rt: KernelRuntime, words: Any, doc_offsets: Any, topics: Any, n_dk: Any, n_wk: Any, n_k: Any,
                 alpha: Any, beta: float, key: int, schedule: int, *, max_blocks: int | None = None) -> None:
    """One Gibbs pass of the dense sampler, in place on ``topics`` and the counts.

    ``schedule`` 0: sequential (one thread, token order, counts updated at once: the test mode);
    1: jacobi, a thread per token with the canonical left-to-right rule (bit-identical to the
    Numba and reference samplers); 2: jacobi with a warp per token (warp-scan cumulative: the same
    distribution, not bit-identical; for large K). ``alpha`` is float64[K].

    >>> from gpu_text.backend import get_backend
    >>> sample_dense(get_backend("cuda").runtime, words, offsets, z, n_dk, n_wk, n_k, alpha, 0.01, key, 1)
    ... # doctest: +SKIP
    """
    xp = rt.xp
    _check_state(words, doc_offsets, topics, n_dk, n_wk, n_k)
    n = int(words.size)
    n_docs = int(doc_offsets.size) - 1
    n_words, n_topics = (int(s) for s in n_wk.shape)
    if int(n_k.size) != n_topics or tuple(n_dk.shape) != (n_docs, n_topics):
        raise ValueError(f"count shapes disagree: n_dk {tuple(n_dk.shape)}, n_wk {tuple(n_wk.shape)}, n_k {n_k.size}")
    alpha = xp.ascontiguousarray(xp.asarray(alpha, xp.float64))
    if int(alpha.size) != n_topics:
        raise ValueError(f"alpha has {alpha.size} entries for {n_topics} topics")
    # V * beta on the host: in the kernel the sum n_k + V * beta could be contracted into an FMA.
    beta, vbeta, key = np.float64(beta), np.float64(n_words) * np.float64(beta), np.uint64(key)
    if schedule not in (SEQUENTIAL, JACOBI, JACOBI_WARP):
        raise ValueError(f"schedule must be 0 (sequential), 1 (jacobi) or 2 (jacobi, warp-parallel); got {schedule!r}")
    if n == 0:
        return
    if schedule == SEQUENTIAL:
        launch(rt.function("lda", "lda_sample_sequential"), 1,
               (words, doc_offsets, i64(n_docs), topics, n_dk, n_wk, n_k, alpha, np.int32(n_topics), beta, vbeta, key))
        return
    new_topics = xp.empty(n, xp.int32)
    if schedule == JACOBI:
        launch(rt.function("lda", "lda_sample_jacobi"), _grid(blocks_for(n, BLOCK), max_blocks),
               (words, doc_offsets, i64(n_docs), topics, new_topics, i64(n), n_dk, n_wk, n_k, alpha,
                np.int32(n_topics), beta, vbeta, key))
    else:
        launch(rt.function("lda", "lda_sample_warp"), _grid(blocks_for(blocks_for(n, WARP_UNIT), WARPS), max_blocks),
               (words, doc_offsets, i64(n_docs), topics, new_topics, i64(n), i64(WARP_UNIT), n_dk, n_wk, n_k, alpha,
                np.int32(n_topics), beta, vbeta, key))
    flag, shared = _nk_shared(n_topics)
    launch(rt.function("lda", "lda_apply_changes"), _grid(min(blocks_for(n, BLOCK), COUNT_BLOCKS), max_blocks),
           (words, doc_offsets, i64(n_docs), topics, new_topics, i64(n), np.int32(n_topics), n_dk, n_wk, n_k, flag),
           shared_mem=shared)


def sample_mh(rt: KernelRuntime, words: Any, doc_offsets: Any, word_offsets: Any, word_tokens: Any, topics: Any,
              n_dk: Any, n_wk: Any, n_k: Any, alpha: Any, beta: float, key: int, n_steps: int, *,
              max_blocks: int | None = None) -> None:
    """One jacobi pass of the Metropolis-Hastings sampler (O(1) per token in K), in place.

    Each token runs ``n_steps`` steps from its topic, alternating the doc proposal (the topic of
    a random token of its document, or alpha) and the word proposal (the topic of a random token
    of its word, or uniform), accepted against the canonical conditional; see ``cuda/lda.cu``.
    ``word_offsets[V+1]`` and ``word_tokens[N]`` (int32) are the word-major token index: token
    indices grouped by word in increasing order, ``argsort(words, kind="stable")``.

    >>> from gpu_text.backend import get_backend
    >>> sample_mh(get_backend("cuda").runtime, words, offsets, word_offsets, word_tokens, z, n_dk, n_wk, n_k,
    ...           alpha, 0.01, key, 2)  # doctest: +SKIP
    """
    xp = rt.xp
    _check_state(words, doc_offsets, topics, n_dk, n_wk, n_k)
    _check(word_offsets=(word_offsets, np.int64), word_tokens=(word_tokens, np.int32))
    n = int(words.size)
    n_docs = int(doc_offsets.size) - 1
    n_words, n_topics = (int(s) for s in n_wk.shape)
    if int(n_k.size) != n_topics or tuple(n_dk.shape) != (n_docs, n_topics):
        raise ValueError(f"count shapes disagree: n_dk {tuple(n_dk.shape)}, n_wk {tuple(n_wk.shape)}, n_k {n_k.size}")
    if int(word_offsets.size) != n_words + 1 or int(word_tokens.size) != n:
        raise ValueError(f"word index has {word_offsets.size} offsets and {word_tokens.size} tokens "
                         f"for {n_words} words and {n} tokens")
    alpha = xp.ascontiguousarray(xp.asarray(alpha, xp.float64))
    if int(alpha.size) != n_topics:
        raise ValueError(f"alpha has {alpha.size} entries for {n_topics} topics")
    if n == 0 or n_steps <= 0:
        return
    alpha_cum = xp.empty(n_topics, xp.float64)
    launch(rt.function("lda", "lda_alpha_cum"), 1, (alpha, np.int32(n_topics), alpha_cum))
    beta = np.float64(beta)
    new_topics = xp.empty(n, xp.int32)
    launch(rt.function("lda", "lda_sample_mh"), _grid(blocks_for(n, BLOCK), max_blocks),
           (words, doc_offsets, i64(n_docs), word_offsets, word_tokens, topics, new_topics, i64(n), n_dk, n_wk, n_k,
            alpha, alpha_cum, np.int32(n_topics), beta, np.float64(n_words) * beta, np.float64(n_topics) * beta,
            np.uint64(key), np.int32(n_steps)))
    flag, shared = _nk_shared(n_topics)
    launch(rt.function("lda", "lda_apply_changes"), _grid(min(blocks_for(n, BLOCK), COUNT_BLOCKS), max_blocks),
           (words, doc_offsets, i64(n_docs), topics, new_topics, i64(n), np.int32(n_topics), n_dk, n_wk, n_k, flag),
           shared_mem=shared)


# Warps of a fold-in launch at most (each has a K-double scratch row: 32 MiB at K = 1024).
FOLD_IN_BLOCKS = 512


def fold_in(rt: KernelRuntime, words: Any, doc_offsets: Any, topics: Any, n_dk: Any, n_wk: Any, n_k: Any,
            alpha: Any, beta: float, key: int, *, max_blocks: int | None = None) -> None:
    """One fold-in sweep, in place on ``topics`` and ``n_dk``: each document sequential Gibbs on its
    own row with the model's ``n_wk``, ``n_k`` fixed (they do not hold these tokens); a warp per
    document, bit-identical to the Numba twin.

    >>> from gpu_text.backend import get_backend
    >>> fold_in(get_backend("cuda").runtime, words, offsets, z, n_dk, n_wk, n_k, alpha, 0.01, key)
    ... # doctest: +SKIP
    """
    xp = rt.xp
    _check(words=(words, np.int32), doc_offsets=(doc_offsets, np.int64), topics=(topics, np.int32),
           n_dk=(n_dk, np.int32), n_wk=(n_wk, np.int32), n_k=(n_k, np.int32))
    n_docs = int(doc_offsets.size) - 1
    n_words, n_topics = (int(s) for s in n_wk.shape)
    if int(n_k.size) != n_topics or tuple(n_dk.shape) != (n_docs, n_topics) or int(topics.size) != int(words.size):
        raise ValueError(f"shapes disagree: n_dk {tuple(n_dk.shape)}, n_wk {tuple(n_wk.shape)}, n_k {n_k.size}, "
                         f"{topics.size} topics for {words.size} tokens")
    alpha = xp.ascontiguousarray(xp.asarray(alpha, xp.float64))
    if int(alpha.size) != n_topics:
        raise ValueError(f"alpha has {alpha.size} entries for {n_topics} topics")
    if int(words.size) == 0:
        return
    n_blocks = _grid(min(blocks_for(n_docs, WARPS), FOLD_IN_BLOCKS), max_blocks)
    scratch = xp.empty(n_blocks * WARPS * n_topics, xp.float64)
    beta = np.float64(beta)
    launch(rt.function("lda", "lda_fold_in"), n_blocks,
           (words, doc_offsets, i64(n_docs), topics, n_dk, n_wk, n_k, alpha, np.int32(n_topics), beta,
            np.float64(n_words) * beta, np.uint64(key), scratch))
