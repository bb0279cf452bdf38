"""The inputs and cases of the device check's kernel table (:mod:`benchmarks.device_kernels`).

Every input is built with numpy from the bundled public-domain samples (``gpu_text/data/samples``),
so the GPU machine, which has no shared data, measures the same text as any other machine. Each
case calls the public API (or a backend op) with the backend it is given: CuPy on a GPU, the
counting CPU emulator in the dry run, at sizes that differ (``full`` and ``dry``) and nothing else.

A case's ``prepare`` builds its inputs (untimed) and returns a :class:`Prepared`: the call to time
and the bytes it processes. The groups run one worker process each (a case that hangs is killed
with its worker, see :mod:`benchmarks.device_kernels`); a group's ``setup`` builds what its cases
share (a tokenizer, a segmenter) before the first case starts, under its own time budget.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from benchmarks.corpora import REPO, SAMPLES
from gpu_text import TextBatch, utf8
from gpu_text.arrays import to_host

MB = 1 << 20
MODEL = REPO / "gpu_text" / "data" / "models" / "sample-bpe-4k.txt"
MONTH_CHARS = 1_840_000  # People's Daily, January 1998: the CRF's GPU target is set on this many characters
CRF_ITERATIONS = 3
_HAN = re.compile("[\u4e00-\u9fff]+")


@dataclass
class Prepared:
    """A case ready to run: ``run()`` is timed (``nbytes`` processed per call); ``measure``, when
    set, replaces the generic timing (the CRF times its own iterations)."""

    run: Callable[[], Any]
    nbytes: int
    notes: str = ""
    measure: Callable[..., dict[str, Any]] | None = None


@dataclass
class Case:
    """One row of the table: ``prepare(context, size)`` with ``size = full`` on a GPU, ``dry`` in the
    dry run; ``budget_s`` bounds its wall time on the GPU (inputs, warm-up and runs)."""

    name: str
    group: str
    full: int
    dry: int
    prepare: Callable[["Context", int], Prepared]
    budget_s: float = 20.0


@dataclass
class Context:
    """What a worker's cases share: the backend, whether this is the dry run, and the group's setup."""

    backend: Any
    dry_run: bool
    shared: dict[str, Any] = field(default_factory=dict)

    def device(self, batch: TextBatch) -> TextBatch:
        """``batch`` on the backend's device (uploaded now, outside any timing)."""
        return batch.to_device(self.backend.xp)


# ------------------------------------------------------------------------------------- text

@lru_cache(maxsize=None)
def sample_lines(lang: str) -> tuple[bytes, ...]:
    """The non-empty lines of the bundled ``zh`` (Hongloumeng) or ``en`` (King James) sample.

    >>> len(sample_lines("en")) > 1000, sample_lines("zh")[0][:3].decode()
    (True, '第')
    """
    name = {"zh": "zh-hongloumeng.txt", "en": "en-kjv.txt"}[lang]
    lines = (line.strip(b"\r") for line in (SAMPLES / name).read_bytes().split(b"\n"))
    return tuple(line for line in lines if line.strip())


def mixed_lines() -> tuple[bytes, ...]:
    """zh and en sample lines alternating (then the longer sample's remainder)."""
    zh, en = sample_lines("zh"), sample_lines("en")
    pairs = [line for pair in zip(zh, en) for line in pair]
    return tuple(pairs + list(zh[len(en):] if len(zh) > len(en) else en[len(zh):]))


def tiled_batch(lines: tuple[bytes, ...], target: int) -> TextBatch:
    """``lines`` as rows, repeated until at least ``target`` bytes (a prefix of them below one copy).

    >>> b = tiled_batch((b"ab", b"cde"), 7)
    >>> b.to_bytes_list(), tiled_batch((b"ab", b"cde"), 2).to_bytes_list()
    ([b'ab', b'cde', b'ab', b'cde'], [b'ab'])
    """
    one = np.frombuffer(b"".join(lines), np.uint8)
    ends = np.cumsum(np.fromiter(map(len, lines), np.int64, len(lines)))
    if target <= one.size:
        k = min(len(lines), int(np.searchsorted(ends, target)) + 1)
        return TextBatch(one[:ends[k - 1]].copy(), np.concatenate([[0], ends[:k]]), check=False)
    reps = -(-target // one.size)
    all_ends = (ends[None, :] + np.arange(reps, dtype=np.int64)[:, None] * one.size).ravel()
    return TextBatch(np.tile(one, reps), np.concatenate([[0], all_ends]), check=False)


def tiled_bytes(unit: bytes, target: int) -> np.ndarray:
    """``unit`` repeated to exactly ``target`` bytes.

    >>> tiled_bytes(b"abc", 7).tobytes()
    b'abcabca'
    """
    one = np.frombuffer(unit, np.uint8)
    return np.tile(one, -(-target // one.size))[:target].copy()


def one_row(data: np.ndarray) -> TextBatch:
    """A batch holding ``data`` as its only string."""
    return TextBatch(data, np.array([0, data.size], np.int64), check=False)


def han_only(target: int) -> np.ndarray:
    """About ``target`` bytes of Han characters only (the zh sample without its punctuation), whole characters."""
    han = "".join(_HAN.findall(b"\n".join(sample_lines("zh")).decode())).encode()
    return tiled_bytes(han, max(3, target - target % 3))


def letters(target: int) -> np.ndarray:
    """``target`` bytes of lowercase letters (the en sample with everything else removed): one word."""
    return tiled_bytes(re.sub(rb"[^a-z]", b"", b"".join(sample_lines("en")).lower()), target)


def sample_dictionary() -> Any:
    """A segmentation dictionary from the zh sample: its Han characters and every 2- to 4-character
    run seen at least twice, with their counts (denser than a real dictionary, so more edges)."""
    from gpu_text.segment import Dictionary

    counts: Counter = Counter()
    for run in _HAN.findall(b"\n".join(sample_lines("zh")).decode()):
        for n in (1, 2, 3, 4):
            counts.update(run[i:i + n] for i in range(len(run) - n + 1))
    words = [w for w, c in counts.items() if len(w) == 1 or c >= 2]
    freqs = np.array([counts[w] for w in words], np.int64)
    return Dictionary(words, freqs, int(freqs.sum()))


def synthetic_month(n_chars: int, seed: int = 0) -> list[str]:
    """Word-segmented lines (words joined by two spaces, as People's Daily's) of about ``n_chars``
    characters: the zh sample's Han characters in order, cut into words of 1-4 characters and
    lines of 20-180 characters at random (``seed``).

    >>> lines = synthetic_month(300)
    >>> 300 <= sum(len(line.replace("  ", "")) for line in lines) < 300 + 180
    True
    """
    rng = np.random.default_rng(seed)
    han = "".join(_HAN.findall(b"\n".join(sample_lines("zh")).decode()))
    text = (han * (-(-n_chars // len(han))))
    lengths = rng.choice([1, 2, 3, 4], size=n_chars, p=[0.35, 0.45, 0.15, 0.05])
    targets = rng.integers(20, 181, size=n_chars // 20 + 2)
    lines, words, pos, in_line = [], [], 0, 0
    for length in lengths.tolist():
        if pos >= n_chars:
            break
        words.append(text[pos:pos + length])
        pos, in_line = pos + length, in_line + length
        if in_line >= targets[len(lines)]:
            lines.append("  ".join(words))
            words, in_line = [], 0
    if words:
        lines.append("  ".join(words))
    return lines


# ------------------------------------------------------------------------------------ cases

def _on_device(run: Callable[[TextBatch], Any], make: Callable[[int], TextBatch], notes: str = ""
               ) -> Callable[[Context, int], Prepared]:
    def prepare(ctx: Context, size: int) -> Prepared:
        batch = make(size)
        device = ctx.device(batch)
        return Prepared(lambda: run(ctx, device), batch.nbytes, notes or f"{len(batch)} strings, on the device")
    return prepare


def _decode(ctx: Context, batch: TextBatch) -> Any:
    return utf8.decode(batch, ctx.backend)


def _segment(ctx: Context, batch: TextBatch) -> Any:
    return ctx.shared["segmenter"].segment(batch, ctx.backend)


def _encode(ctx: Context, batch: TextBatch) -> Any:
    return ctx.shared["tokenizer"].encode(batch, ctx.backend)


def _encode_host_to_host(make: Callable[[int], TextBatch]) -> Callable[[Context, int], Prepared]:
    def prepare(ctx: Context, size: int) -> Prepared:
        batch = make(size)

        def run() -> None:
            encoded = ctx.shared["tokenizer"].encode(batch, ctx.backend)
            to_host(encoded.ids.values), to_host(encoded.ids.offsets)

        return Prepared(run, batch.nbytes, f"{len(batch)} strings: host text in, host ids and offsets out")
    return prepare


def _sixteen_byte_strings(size: int) -> TextBatch:
    n = max(1, size // 16)
    data = tiled_bytes(b"".join(sample_lines("en")), 16 * n)
    return TextBatch(data, np.arange(n + 1, dtype=np.int64) * 16, check=False)


def _pre_tokens_of_500(size: int) -> TextBatch:
    n = max(1, size // 500)
    return TextBatch(letters(500 * n), np.arange(n + 1, dtype=np.int64) * 500, check=False)


def _crf(ctx: Context, size: int) -> Prepared:
    from gpu_text.crf import read_segmented_bmes

    X, y = read_segmented_bmes(synthetic_month(size), "  ")
    n_chars = sum(map(len, X))
    return Prepared(lambda: None, 3 * n_chars,
                    f"{len(X)} sentences, {n_chars} characters (UTF-8 bytes per iteration); "
                    f"{CRF_ITERATIONS} L-BFGS iterations",
                    measure=lambda api, hook: crf_iterations(ctx, api, hook, X, y))


def crf_iterations(ctx: Context, api: Any, hook: Any, X: list, y: list) -> dict[str, Any]:
    """Train a CRF (default Chinese pattern, L2) for :data:`CRF_ITERATIONS` iterations; the figures
    are per iteration: seconds from its history, launches, syncs and kernel time over the
    optimiser's call (``gpu_text.crf.model.minimize``, marked while the fit runs; the whole fit,
    setup included, when it is not called) divided by the iterations. Features are extracted on the
    CPU by ``fit`` before the optimiser starts, outside the figures; a small fit first warms up."""
    import gpu_text.crf.model as crf_model
    from gpu_text.crf import CRF

    def fit(X_: list, y_: list, iterations: int) -> Any:
        return CRF(rho1=0.0, rho2=1e-4, max_iterations=iterations, stop_window=0, epsilon=0.0,
                   backend=ctx.backend).fit(X_, y_)

    fit(X[:50], y[:50], 2)
    original = getattr(crf_model, "minimize", None)
    with hook() as seen:
        def marked(*args: Any, **kwargs: Any) -> Any:
            seen["mark"]()
            try:
                return original(*args, **kwargs)
            finally:
                seen["mark"]()

        if callable(original):
            crf_model.minimize = marked
        try:
            model = fit(X, y, CRF_ITERATIONS)
        finally:
            if callable(original):
                crf_model.minimize = original
    window = seen.pop("window", None)
    scope = "the optimiser's call" if window else "the whole fit (gpu_text.crf.model.minimize was not called)"
    seconds = [h["seconds"] for h in model.history_]
    n = max(1, len(seconds))
    return {"runs": seconds, "per_iteration": window or seen, "iterations": len(seconds),
            "notes": f"per iteration ({len(seconds)} iterations, {model.history_[-1]['evaluations']} evaluations; "
                     f"counts and kernel time over {scope} / {n}; one fit, timed with the launch hook on); "
                     f"{model.n_unigram_} unigram observations; features extracted in "
                     f"{model.extract_seconds_:.1f} s on the CPU beforehand"}


# the BPE wrapper's thresholds between a thread, a warp and a block per pre-token (module globals of
# gpu_text.cuda_ops.bpe read at each call), and the values the sweep tries: at most the kernels'
# limits (THREAD_MAX_BYTES 48, the thread's local arrays; WARP_MAX_BYTES 512), larger ones are
# clamped to them
BPE_THRESHOLDS = {"WARP_BYTES": (8, 16, 24, 32, 48), "LONG_BYTES": (128, 256, 512)}


def _bpe_sweep(ctx: Context, size: int) -> Prepared:
    batch = ctx.device(_mixed(size))
    return Prepared(lambda: None, batch.nbytes, "", measure=lambda api, hook: bpe_thresholds(ctx, api, hook, batch))


def bpe_thresholds(ctx: Context, api: Any, hook: Any, batch: TextBatch) -> dict[str, Any]:
    """The encode of ``batch`` (median of 3 after a warm-up, and one instrumented) with the wrapper's
    thresholds as they are, then with each of :data:`BPE_THRESHOLDS` in turn (the others as they
    are): seconds, GB/s and whether the ids are the same as with the defaults. A threshold the
    wrapper no longer has is reported absent."""
    import statistics
    import time

    import gpu_text.cuda_ops.bpe as bpe

    tokenizer, xp = ctx.shared["tokenizer"], ctx.backend.xp

    def timed() -> tuple[float, Any]:
        runs = []
        for _ in range(4):
            start = time.perf_counter()
            out = tokenizer.encode(batch, ctx.backend)
            api.synchronize()
            runs.append(time.perf_counter() - start)
        return statistics.median(runs[1:]), out

    seconds, base = timed()
    with hook() as seen:
        tokenizer.encode(batch, ctx.backend)
    sweep: dict[str, Any] = {}
    for name, values in BPE_THRESHOLDS.items():
        default = getattr(bpe, name, None)
        if not isinstance(default, int):
            sweep[name] = "absent"
            continue
        for value in values:
            setattr(bpe, name, value)
            try:
                s, out = timed()
            finally:
                setattr(bpe, name, default)
            same = bool(xp.array_equal(out.ids.values, base.ids.values)) and bool(
                xp.array_equal(out.ids.offsets, base.ids.offsets))
            sweep[f"{name}={value}"] = {"seconds": s, "gb_per_s": batch.nbytes / s / 1e9, "same_ids": same,
                                        "default": value == default}
    summary = ", ".join(f"{k} {v['gb_per_s']:.3g} GB/s{' (default)' if v['default'] else ''}"
                        f"{'' if v['same_ids'] else ' DIFFERENT IDS'}" if isinstance(v, dict) else f"{k} absent"
                        for k, v in sweep.items())
    return {"runs": [seconds], "per_iteration": seen, "iterations": 1, "sweep": sweep,
            "notes": f"{len(batch)} strings on the device; thresholds of gpu_text.cuda_ops.bpe, median of 3: {summary}"}


def setup_segment(ctx: Context) -> None:
    from gpu_text.segment import Segmenter

    ctx.shared["segmenter"] = Segmenter(sample_dictionary(), compat="jieba")
    ctx.shared["segmenter"].segment(ctx.device(tiled_batch(sample_lines("zh"), 4096)), ctx.backend)


def setup_tokenize(ctx: Context) -> None:
    from gpu_text.tokenizer.tokenizer import Tokenizer

    ctx.shared["tokenizer"] = Tokenizer.from_model_file(MODEL)
    ctx.shared["tokenizer"].encode(ctx.device(tiled_batch(mixed_lines(), 4096)), ctx.backend)


def _zh(size: int) -> TextBatch:
    return tiled_batch(sample_lines("zh"), size)


def _en(size: int) -> TextBatch:
    return tiled_batch(sample_lines("en"), size)


def _mixed(size: int) -> TextBatch:
    return tiled_batch(mixed_lines(), size)


def _mixed_line(size: int) -> TextBatch:
    return one_row(tiled_bytes(b" ".join(mixed_lines()) + b" ", size))


KB = 1 << 10
# (group, setup): the order they run in; the long single-row cases come last, after the CRF, so a
# kernel that is slow on them cannot take the others' time
GROUPS: list[tuple[str, Callable[[Context], None] | None]] = [
    ("utf8", None), ("segment", setup_segment), ("tokenize", setup_tokenize), ("crf", None),
    ("tokenize long rows", setup_tokenize)]

CASES: list[Case] = [
    Case("utf8 decode: en lines 256 MB", "utf8", 256 * MB, 8 * KB, _on_device(_decode, _en), 15),
    Case("utf8 decode: zh lines 256 MB", "utf8", 256 * MB, 8 * KB, _on_device(_decode, _zh), 15),
    Case("utf8 decode: one 256 MB string (zh)", "utf8", 256 * MB, 8 * KB,
         _on_device(_decode, lambda n: one_row(tiled_bytes(b"".join(sample_lines("zh")), n)), "one string"), 15),
    Case("utf8 decode: 16M strings of 16 bytes (en)", "utf8", 256 * MB, 8 * KB,
         _on_device(_decode, _sixteen_byte_strings), 15),
    Case("segment: zh lines 16 MB", "segment", 16 * MB, 4 * KB, _on_device(_segment, _zh), 15),
    Case("segment: zh lines 128 MB", "segment", 128 * MB, 8 * KB, _on_device(_segment, _zh), 25),
    Case("segment: one 1 MB Han line, no punctuation", "segment", 1 * MB, 2 * KB,
         _on_device(_segment, lambda n: one_row(han_only(n)), "one string, one Han run"), 20),
    Case("tokenize: zh+en lines 16 MB, on device", "tokenize", 16 * MB, 4 * KB, _on_device(_encode, _mixed), 15),
    Case("tokenize: zh+en lines 16 MB, host to host", "tokenize", 16 * MB, 4 * KB, _encode_host_to_host(_mixed), 15),
    Case("tokenize: zh+en lines 256 MB, on device", "tokenize", 256 * MB, 8 * KB, _on_device(_encode, _mixed), 25),
    Case("tokenize: zh+en lines 256 MB, host to host", "tokenize", 256 * MB, 8 * KB,
         _encode_host_to_host(_mixed), 25),
    Case("tokenize: BPE thresholds swept, zh+en lines 16 MB", "tokenize", 16 * MB, 4 * KB, _bpe_sweep, 30),
    Case(f"crf: {CRF_ITERATIONS} L-BFGS iterations, synthetic month (1.84M chars)", "crf", MONTH_CHARS, 3000, _crf,
         60),
    Case("tokenize: one 500-byte pre-token", "tokenize long rows", 500, 500,
         _on_device(_encode, lambda n: one_row(letters(n)), "one string, one pre-token (letters)"), 10),
    Case("tokenize: 32K pre-tokens of 500 bytes (16 MB)", "tokenize long rows", 16 * MB, 4 * KB,
         _on_device(_encode, _pre_tokens_of_500, "one pre-token (letters) per string"), 15),
    Case("tokenize: 'a' * 2**20 (one pre-token)", "tokenize long rows", MB, 2 * KB,
         _on_device(_encode, lambda n: one_row(np.full(n, ord("a"), np.uint8)), "one string, one pre-token"), 20),
    Case("tokenize: one 16 MB line (zh+en)", "tokenize long rows", 16 * MB, 4 * KB,
         _on_device(_encode, _mixed_line, "one string"), 25),
]
