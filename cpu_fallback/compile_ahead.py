"""Compiling a command's later kernels in a second process while this one compiles the earlier
ones, so that a first run (an empty Numba cache) on two cores waits for the longer half of the
compiling rather than for the whole. No CUDA twin: build machinery, like :mod:`cpu_fallback.jit`.

A plan (:data:`PLANS`) names, for one command, the kernels a child process compiles (``there``,
in the order the command first calls them) and those this process compiles first (``here``: kernels
that ``there``'s kernels call, which the child then loads from the disk cache instead of compiling
them a second time), each for the argument types the command calls it with
(``tests/test_compile_ahead.py`` runs the commands and checks them). :func:`start` starts the child
when a ``there`` kernel is not in the disk cache, and makes each such kernel's first call wait until
the child has compiled it (the call then loads it from the disk cache, :class:`_Waiting`).

Whatever goes wrong (the child cannot start, fails, is killed, cannot write the cache, or
compiles other types than the call needs) the kernel compiles here on its first call, as it
would without a plan; results never depend on which process compiled. :func:`stop` ends the
child if it still runs and reaps it; the command line calls it when the command ends (normally,
on an error or on Ctrl-C). ``$GPU_TEXT_COMPILE_AHEAD=0`` turns plans off; with one core there is
no child either.

>>> for t in parse_signature("u1[] (i4[,] u1[]!) i8 b1 {i8:i8} f8[,,]"):
...     print(t)
array(uint8, 1d, C)
Tuple(array(int32, 2d, C), readonly array(uint8, 1d, C))
int64
bool
DictType[int64,int64]<iv=None>
array(float64, 3d, C)
"""
from __future__ import annotations

import importlib
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DISABLE_VAR = "GPU_TEXT_COMPILE_AHEAD"  # "0": never start a child
WAIT_SECONDS = 600.0  # the longest a first call waits for the child before compiling here instead

# A kernel is "module.function: signature", the signature in short: a NumPy type code (i1 i2 i4
# i8 u1 u4 u8 f4 f8; b1 is bool) is a scalar; with [] a C-contiguous 1-D array, [,] 2-D, [,,] 3-D; a
# trailing ! makes the array read-only (a model file's bytes); (...) is a tuple, {k:v} a typed dict.
_NORMALIZE_ROW = ("normalizer.normalize_row: i4[] i4[] u1[] u1[] u1[] i8[] u1[] i8 i8 u1[] i8 i8 u1[]! u1[] i8[] i8 "
                  "b1 b1 i4[] i8[]")
_MERGE_TABLES = ("merge_tables.piece_chars: u1[]! i8[]", "merge_tables.table_of: u8[] i4[]",
                 "merge_tables._pair_keys: u1[]! i8[] i4[] u8[] i4[] i4[] i4[] u1[] u1[]")
_LINES = ("lines.count_newlines: u1[] i8", "lines.split_lines: u1[] i8 b1 u1[] i8[]")
_UTF8_STATS = ("utf8.utf8_string_stats: u1[] i8[]", "utf8._decode_into: u1[] i8[] i8[] u4[] i4[]")
# a corpus's words counted (word2vec and LDA read their corpus alike)
_COUNT_TOKENS = ("word2vec_vocab.count_tokens: u1[] i8[] i8[] i8[] i8 i8 i4[] i8[] u1[] i8[] i8[] i8[] u8[] i8[] "
                 "i8 i8 i8 i8")
# a document's normalized rows (the tokenizers' normalizer, called from Python)
_NORMALIZE_ROWS = ("normalizer._rows: i8 i8 i4[] i4[] u1[] u1[] u1[] i8[] u1[] i8[] u1[] i8 i8 i8[] u1[] i8[] b1 b1 "
                   "i4[] i8[]")
_LATTICE = ("trie._span_matches: i4[] i4[] u1[] u1[] u1[]{model} i8[] i8[] i8[] i8[] i8[] i4[] b1",
            "lattice._route_spans: u1[]{model} i8[] i8[] i8[] i8[] i4[] i8[] f8[] f8 i8 i8 i8[] f8[] i8[] i4[]",
            "lattice._emit_spans: i8[] i8[] i8[] i8[] i4[] i8[] i8[] i8[] i4[]")

# plan: (here, there), each in the order the command first calls them; a command may start
# several (the command line's gpu_text.warmup.ahead_plans says which). Measured on two cores, an
# empty cache (python -m benchmarks cold_start): each plan's ``there`` is about half the compiling.
PLANS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # here the normalizer and the model's tables (trie, merge tables); there the line splitter
    # (the input is read after the model) and the row encoder. The halves are even (with a Parquet
    # output: 8.4-9.4 CPU s here against 8.8-9.6 there on a first run, 304a7e4-2977a0b); the line
    # splitter here made this one longer (11.5 s against 11.0, before 4cd003a)
    "tokenize-bpe": ((_NORMALIZE_ROW,), (
        *_LINES,
        "bpe.encode_pre_token: u1[] i8 i8 f4[] u8[] i4[] u8[] i4[] u8[] i4[] i4[] i4[] i4[] i8[,] i8 i8[] i4[] i4[] "
        "f4[]",
        "tokenizer._encode_rows: u1[] i8[] i8 i8 (i4[] i4[] u1[] u1[] u1[] i8[]) u1[] i8 i8 i8 i4[] i4[,] u1[] u4 f4[] "
        "u8[] i4[] u8[] i4[] u8[] i4[] i4[] i4[] i4 b1 (i4[] i4[] u1[] u1[]) i8[,] (i8[,] i4[,] i4[,] f4[,])")),
    # here the line splitter, the lattice's tokens (otherwise compiled after the lattice) and the
    # model's tries; there the normalizer's rows, the pre-tokenizer, the lattice
    "tokenize-bytepiece": ((*_LINES,
                            "lattice_tokens._kinds: u1[] i8[] i8[] i8[] i4[] i8 i4 b1[] i8[] i4[] i4[] u1[] u1[]",
                            "lattice_tokens._write: u1[] i8[] i8[] i4[] i8[] i4[] i4[] i8[] i8[]"), (
        _NORMALIZE_ROWS,
        "pre_tokenizer._cuts: i8 i8 u1[] i8[] u1[,] u4 u1[]",
        "pre_tokenizer._scan: i8 i8 u1[] i8[] i8[] i4[,] u1[] u4 u1[]",
        *(k.format(model="") for k in _LATTICE))),
    # the Parquet writer's pages, otherwise compiled after the encoding: here, while the child compiles
    # the encoder (with a tokenize plan, when the output is Parquet)
    "parquet": (("parquet_pages.encode_pages: i4[] i8[] i8[] i8 u1[] i8[]",), ()),
    # here the tables; there the row encoder
    "tokenize-unigram": ((), (
        "unigram_rows._encode_rows: u1[] i8[] i8 i8 (i4[] i4[] u1[] u1[] u1[] i8[]) u1[] i8 i8 i8 i4[] b1 i4[,] i4[] "
        "i8[] i4[] f8[] f8 i4 b1 i4[] b1",)),
    # here reading, the candidates' trie and the corpus's tokens; there the spans, cut and route
    "train-dict": ((), (
        "trie._span_matches: i4[] i4[] u1[] u1[] u1[] i8[] i8[] i8[] i8[] i8[] i4[] b1",
        "segment.forward_longest_match: u1[] i8[] i8[] i8[] i8[] i4[] i8[]",
        "segment._route: u1[] i8[] i8[] i8[] i8[] i4[] i8[] f8[] f8 f8 b1 i8[] f8[] i8[] i4[]",
        "segment._emit: i8[] i8[] i8[] i8[] i4[] i8[] i8[] i4[]")),
    # here reading, normalizing, pre-tokenizing and counting; there the merges and the model's tables
    # (the longer half already: the normalizer's rows there made this process wait 5.8 s)
    "train-bpe": ((), (
        *_UTF8_STATS, "bpe_trainer.new_seen_table: ", "merge_tables.empty_table: i8",
        "bpe_trainer.build_pairs: i4[] i4[] i8[] i8 i8 u8[] i4[] i4[] i4[] i4[] i4[] i8[] i4[] i4[] i1[] i4[] i4[] "
        "i4[] i8[]",
        "bpe_trainer.train_steps: i8 i8 i8 i8 i8 i4[] i4[] i4[] i8[] i4[] i4[] i4[] i4[] i4[] i8[] i4[] i4[] i1[] i4[] "
        "i4[] i8[] i4[] i4[] i8[] u8[] i4[] {i8:i8} i4[] i4[] i4[] i4[]",
        *_MERGE_TABLES)),
    # here the seed's iteration order (compiled first: the child's half was the longer, 8.6 CPU s
    # against 7.9, and ended 1.1 s after this process began waiting), then reading, normalizing,
    # pre-tokenizing and n-gram counting; there the byte Viterbi, the seed's hashes and the lattice
    "train-bytepiece": (("bytepiece_trainer.cxx_iteration_order: u8[] i8[] i8[]",), (
        "bytepiece_trainer.byte_viterbi_starts: u1[] i8[] i8[] u8[] f8[]",
        "bytepiece_trainer.cxx_string_hashes: u1[]! i8[]",
        *(k.format(model="!") for k in _LATTICE),
        "bytepiece_trainer.cxx_sort_by_count: i8[]")),
    # here reading, pre-tokenizing and counting; there the normalizer's rows (needed once the
    # normalizer's trie is built and the input read: the child has them by then), the seeds and EM
    "train-unigram": ((), (
        _NORMALIZE_ROWS,
        *_UTF8_STATS, "unigram_trainer.run_ends: i4[] i8[]", "unigram_trainer.lcp_capped: i4[] i8[] i8[] i8",
        "unigram_trainer.seed_nodes: i8[] i8[] i8[] f8[] i8 f8 i8[] i8[] i8[] f8[]",
        "unigram_trainer.build_edges: i4[] i8[] i8[] i8[] i8[] i8[]",
        "unigram_trainer.e_step: i8[] f8[] i8[] i2[] i4[] f8[] f8 i8 i8 f8[]",
        "unigram_trainer.compact_edges: i8[] i2[] i4[] i8[]")),
    # here the line splitter and the small steps around the segmenter (its dictionary's trie is built
    # here too, first); there the chunk segmenter, half the compiling
    "segment": (_LINES + ("segment._packed_nodes: i4[] i4[] u1[] u1[]", "segment._three_byte_slots: i4[] i4[] u1[]",
                          "segment._compact: i8[] i8[] i8[] i4[] i4[] i4[] i8[] i8[] i4[]",
                          "segment_output._joined_size: i8[] i8[] i8[] i8[]",
                          "segment_output._fill: u1[] i8[] i8[] i8[] i8[] u1 u1[]"), (
        "segment._chunk_words: i4[,] i4[] u1[] i8[] i8 i8 f8[] f8 f8 b1 i4[] i4[] i4[] i8[]",)),
    # here the gradient's scatters and the optimiser's vector steps (otherwise compiled after the
    # forward-backward pass) while reading; there the forward-backward pass, half the compiling
    "crf-train": (("crf._unigram_scatter: f8[,] i4[] i8[] i8[] f8[,] f8 f8[,]",
                   "crf._bigram_partials: f8[,,] f8[,] f8[,] i4[] i8[] i8[] i8[] i8[] f8[,]",
                   "crf._reduce_chunks: f8[,] i8[] f8[,] f8 f8[,]",
                   "vectors._dot_blocks: f8[] f8[] f8[] i8 i8",
                   "vectors._history_blocks: f8[,] f8[,] i8[] i8 f8[] f8[,,] i8 i8",
                   "vectors._combine_rows_blocks: f8[] f8 f8[] f8[] f8[] f8[,] f8[,] i8[] f8[] i8 i8",
                   "vectors._store_pair_blocks: f8[] f8[] f8[] f8[] f8[] f8[] f8[] i8 i8",
                   "crf._posterior_errors: f8[,] i4[]"), (
        "crf._forward_backward: f8[,] f8[,,] f8[,,] i8[] i8[] i8[] i8[] i8[] i4[] f8[,] f8[,] f8[,] f8[] f8[]",)),
    # here the sampling's set-up while reading; there the counting of the words and the training
    "word2vec-train": (("word2vec._subsample: i4[] u4[] u8", "word2vec._search_index: u4[]"), (
        _COUNT_TOKENS,
        "word2vec._train_units: i8 i8 f8[] i4[] i8[] f4[,] f4[,] f4[,] u1[] i4[] i8[] u4[] i8[] i8 i8 i8 i8 i8 i8 "
        "f8 f8 u8 i8 i8 i8")),
    # here the topics' set-up while reading; there the counting of the words and the model's text
    # (both samplers: the dense sampler's own cell compiles here)
    "lda-train": (("lda._init_topics: i8 i8 u8", "lda._count_docs: i8[] i4[] i4[,]",
                   "lda._count_words: i4[] i4[] i4[,] i4[]", "lda_blocks._build_lists: i4[,] i8[] i4[] i4[] i4[] b1"), (
        _COUNT_TOKENS, "decimal_text._format: f8[,] u1[] b1[,] i8 i8 i8")),
}

_CODES = {"u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64", "i1": "int8", "i2": "int16",
          "i4": "int32", "i8": "int64", "f4": "float32", "f8": "float64", "b1": "boolean"}
_TOKEN = re.compile(r"[(){}:]|([uifb][1248])(\[,*\])?(!)?")


def parse_signature(text: str) -> tuple:
    """The Numba argument types that ``text`` (the short form of :data:`PLANS`) stands for."""
    from numba.core import types

    stack: list[list[Any]] = [[]]
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token in "({":
            stack.append([])
        elif token == ")":
            items = stack.pop()
            stack[-1].append(types.Tuple(items))
        elif token == "}":
            key, value = stack.pop()
            stack[-1].append(types.DictType(key, value))
        elif token != ":":
            code, dims, readonly = match.groups()
            scalar = getattr(types, _CODES[code])
            stack[-1].append(scalar if dims is None else
                             types.Array(scalar, dims.count(",") + 1, "C", readonly=readonly is not None))
    if len(stack) != 1:
        raise ValueError(f"unbalanced brackets in signature {text!r}")
    return tuple(stack[0])


def _kernel(entry: str) -> tuple[Any, tuple]:
    """The dispatcher and argument types of a plan's entry ``"module.function: signature"``."""
    name, signature = entry.split(":", 1)
    module, function = name.strip().rsplit(".", 1)
    return getattr(importlib.import_module(f"{__package__}.{module}"), function), parse_signature(signature)


def _is_cached(dispatcher: Any, signature: tuple) -> bool:
    """Whether ``dispatcher`` has ``signature`` compiled, in memory or in its disk cache (an error
    reading Numba's index counts as cached: no child for it)."""
    if signature in dispatcher.overloads:
        return True
    try:
        cache = dispatcher._cache
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return True


def _cpu_seconds() -> float:
    return time.process_time()


class _Child:
    """The child process of a plan: compiles its kernels in order, printing each one's index (and
    its own CPU seconds so far) when done."""

    def __init__(self, entries: list[str]) -> None:
        self.done = [threading.Event() for _ in entries]
        self.cpu = [math.nan] * len(entries)  # the child's CPU seconds when each was done
        self.started = _cpu_seconds()  # this process's CPU seconds when the child started
        root = Path(__file__).resolve().parents[__name__.count(".")]  # the folder holding this package
        path = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
        self.process = subprocess.Popen([sys.executable, "-m", __name__, *entries],
                                        env=dict(os.environ, PYTHONPATH=path), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, name="compile-ahead", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            for line in self.process.stdout:
                index, _, cpu = line.partition(" ")
                if index.isdigit() and int(index) < len(self.done):
                    self.cpu[int(index)] = float(cpu or "nan")
                    self.done[int(index)].set()
        finally:  # the child ended (or its pipe broke): nothing more to wait for
            for event in self.done:
                event.set()

    def wait(self, index: int, seconds: float) -> None:
        """Wait until the child has compiled entry ``index`` or ended; end it when ``seconds`` pass first."""
        if not self.done[index].wait(seconds):
            self.stop()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(5)
        self.process.stdout.close()


class _Waiting:
    """Put on a dispatcher as its ``compile`` while the child compiles it: Numba calls ``compile``
    for a call with new types (from Python, or while typing a caller), so the first call waits
    for the child here, then compiles as usual, which now finds the child's code in the disk cache."""

    def __init__(self, dispatcher: Any, child: _Child, index: int) -> None:
        self.dispatcher, self.child, self.index = dispatcher, child, index

    def __call__(self, sig: Any) -> Any:
        waits_at = _cpu_seconds()
        with _LOCK:
            callbacks = list(_ON_WAIT)
            _ON_WAIT.clear()
        for callback in callbacks:  # the first wait only
            callback()
        self.child.wait(self.index, WAIT_SECONDS)
        WAITS.append((self.dispatcher.py_func.__name__, waits_at, self.child.started + self.child.cpu[self.index]))
        _restore(self.dispatcher)
        return self.dispatcher.compile(sig)


_CHILDREN: list[_Child] = []
_ON_WAIT: list[Callable[[], Any]] = []  # called when this process first waits for a child
# (kernel, this process's CPU seconds when its first call began waiting, the CPU seconds at which
# it would have been ready had the child run on a core of its own from its start):
# benchmarks/cold_start.py reckons from these what a first run takes on two idle cores
WAITS: list[tuple[str, float, float]] = []
_WAITING: list[Any] = []  # the dispatchers whose compile is a _Waiting
_LOCK = threading.RLock()


def _restore(dispatcher: Any) -> None:
    with _LOCK:
        if isinstance(dispatcher.__dict__.get("compile"), _Waiting):
            del dispatcher.__dict__["compile"]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def start(*plans: str, on_wait: Callable[[], Any] | None = None) -> bool:
    """Start ``plans`` (one child for all): if any of their ``there`` kernels is missing from the
    cache (and this process may use two cores), start the child that compiles them, then compile
    the ``here`` kernels. True when a child was started. Its kernels' first calls wait for it
    (see :class:`_Waiting`); the first of them calls ``on_wait`` (the command line's compile
    notice: this process compiles nothing itself then, or not yet)."""
    here = [entry for plan in plans for entry in PLANS[plan][0]]
    there = [entry for plan in plans for entry in PLANS[plan][1]]
    if os.environ.get(DISABLE_VAR, "1").strip() == "0" or _cpus() < 2:
        return False
    missing = []
    for entry in there:
        try:
            dispatcher, signature = _kernel(entry)
        except Exception:  # an entry that does not import or parse here would fail in the child too
            continue
        if not _is_cached(dispatcher, signature) and "compile" not in dispatcher.__dict__:
            missing.append((entry, dispatcher))
    if not missing:
        return False
    with _LOCK:
        try:
            child = _Child([entry for entry, _ in missing])
        except OSError:
            return False
        _CHILDREN.append(child)
        if on_wait is not None:
            _ON_WAIT.append(on_wait)
        for index, (_, dispatcher) in enumerate(missing):
            dispatcher.compile = _Waiting(dispatcher, child, index)
            _WAITING.append(dispatcher)
    for entry in here:
        try:
            _compile(entry)
        except Exception:  # compiled (or reported) again where the command calls it
            pass
    return True


def _compile(entry: str) -> None:
    dispatcher, signature = _kernel(entry)
    dispatcher.compile(signature)


def load(*plans: str) -> None:
    """Compile, or load from the disk cache, every kernel of ``plans`` in this process (one the
    child compiles waits for it first), without running any: a process that forks workers gives
    them the kernels. An entry that fails here is left to compile, or report its error, where it
    is called."""
    for entry in (entry for plan in plans for side in PLANS.get(plan, ()) for entry in side):
        try:
            _compile(entry)
        except Exception:
            pass


def stop() -> None:
    """End every child still running (their kernels then compile here on first use), reap it and
    give the dispatchers their own ``compile`` back."""
    with _LOCK:
        children, waiting = list(_CHILDREN), list(_WAITING)
        _CHILDREN.clear()
        _WAITING.clear()
        _ON_WAIT.clear()
        for dispatcher in waiting:
            _restore(dispatcher)
    for child in children:
        child.stop()


def _main(entries: list[str]) -> int:
    """The child: compile each kernel (Numba writes it to the disk cache), print its index and the
    CPU seconds so far."""
    for index, entry in enumerate(entries):
        _compile(entry)
        print(index, _cpu_seconds(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
