"""``gpu-text segment | train-dict | score``: dictionary word segmentation on the command line.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices)
['score', 'segment', 'train-dict']
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from gpu_text.cli_helpers import (add_backend_options, add_command, add_document_options, atomic_outputs,
                                  check_backend, check_outputs, chunk_bytes, failing_documents, load_file,
                                  non_negative_int, open_output, positive_int, progress_bar, progress_enabled,
                                  reader_options)
from gpu_text.documents import Documents, document_options, iter_documents, read_documents, total_bytes


def cmd_segment(args: argparse.Namespace) -> int:
    """Stream IN document by document into OUT, each document's words joined by one space on a line.

    Reading and writing run on their own threads (:mod:`gpu_text.pipeline`), the segmentation on
    this one; the output bytes are built by a Numba function straight from the words' byte spans.
    ``--verbose`` prints where the time went.
    """
    started = time.perf_counter()
    from gpu_text.backend import get_backend
    from gpu_text.pipeline import run_pipeline
    from gpu_text.segment import Segmenter, load_dictionary

    check_outputs([args.input, args.dict], [args.output])
    check_backend(args)
    clock = _StageClock(started)
    clock.lap("imports")
    cache = segmenter_cache_path(args.dict, args.compat, args.on_error) if args.dict else None
    segmenter = _cached(cache, args.compat)
    clock.cache = "hit" if segmenter is not None else ("miss" if cache else "off")
    if segmenter is None:
        dictionary = None
        if args.dict:
            dictionary = load_file(args.dict, lambda p: load_dictionary(p, on_error=args.on_error), "dictionary")
        clock.lap("dictionary")
        segmenter = Segmenter(dictionary, compat=args.compat)
        if cache is not None:
            clock.cache = "miss, written" if _write_cache(segmenter, cache) else "miss, not writable"
    else:
        clock.lap("dictionary")
    if segmenter.dictionary is not None and segmenter.dictionary.skipped:
        skipped = segmenter.dictionary.skipped
        print(f"skipped {len(skipped)} malformed dictionary lines (first: {skipped[0]})", file=sys.stderr)
    backend = get_backend(args.backend)
    # the output is built on the host from host text: a GPU backend's spans are copied back
    join_words = get_backend("cpu").op("segment_output", "join_words")
    clock.lap("trie")
    counts = {"lines_in": 0, "lines_out": 0, "bytes_in": 0, "bytes_out": 0}

    def segment(located: Documents) -> tuple[Documents, np.ndarray, np.ndarray, np.ndarray]:
        with failing_documents(located.path, located.first, len(located.batch)):
            result = segmenter.segment(located.batch, backend=backend)
            starts, ends = result.starts.to_numpy(), result.ends.to_numpy()
        return located, starts.offsets, starts.values, ends.values

    with open_output(args.output) as sink, progress_bar(total_bytes([args.input]), "segment") as bar:
        def write(segmented: tuple[Documents, np.ndarray, np.ndarray, np.ndarray]) -> None:
            located, word_offsets, starts, ends = segmented
            batch = located.batch
            mark = time.perf_counter()
            with failing_documents(located.path, located.first, len(batch)):
                text, newlines = join_words(batch.data, batch.offsets, word_offsets, starts, ends)
            clock.add("join", time.perf_counter() - mark)
            sink.write(memoryview(text))
            counts["lines_in"] += len(batch)
            counts["lines_out"] += newlines
            counts["bytes_in"] += int(batch.offsets[-1] - batch.offsets[0])
            counts["bytes_out"] += text.size

        documents = iter_documents([args.input], args.field, chunk_bytes(args), bar, **reader_options(args))
        # depth 1: a batch waiting on each side of the segmenter is enough to overlap, and each one
        # in flight costs its text and its word spans (about 6x the text)
        stats = run_pipeline(documents, segment, write, depth=1)
    clock.lap("pipeline")
    if counts["lines_in"] != counts["lines_out"]:
        raise RuntimeError(f"read {counts['lines_in']} documents but wrote {counts['lines_out']} lines")
    print(f"segmented {counts['lines_in']} lines", file=sys.stderr)
    if args.verbose:
        print(clock.report(stats, counts, backend.name), file=sys.stderr)
    return 0


CACHE_FORMAT = 1  # with the segmenter's own file format: bump to orphan every cached entry


def segmenter_cache_path(dictionary: str, compat: str | None, on_error: str) -> Path | None:
    """Where ``gpu-text segment`` keeps the segmenter built from ``dictionary``: under
    ``$XDG_CACHE_HOME/gpu_text`` (or ``~/.cache/gpu_text``), named by the sha256 of the
    dictionary's bytes, the options that shape the segmenter and the formats (and, with
    ``on_error="skip"``, the path as given, which the saved messages of skipped lines name).
    ``None`` when the dictionary cannot be read (the build that follows reports why).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.txt")
    >>> _ = open(p, "w").write("你好 3\\n")
    >>> segmenter_cache_path(p, "jieba", "raise") == segmenter_cache_path(p, "jieba", "skip")
    False
    """
    from gpu_text.segment.segmenter_file import FILE_FORMAT

    digest = hashlib.sha256()
    try:
        with open(dictionary, "rb") as raw:
            while block := raw.read(1 << 20):
                digest.update(block)
    except OSError:
        return None
    digest.update(f"\0{compat}\0{on_error}\0{FILE_FORMAT}\0{CACHE_FORMAT}".encode())
    if on_error == "skip":  # the skipped lines' messages name the file as given
        digest.update(f"\0{dictionary}".encode("utf-8", "surrogatepass"))
    from gpu_text.table_cache import user_cache_root

    return user_cache_root() / f"segmenter-{digest.hexdigest()}.npz"


def _cached(path: Path | None, compat: str | None) -> Any:
    """The cached segmenter at ``path``, or ``None`` when there is none or it fails its checks
    (a stale or corrupt entry is rebuilt and replaced, never used)."""
    from gpu_text.segment import Segmenter

    if path is None or not path.is_file():
        return None
    try:
        segmenter = Segmenter.load(path, tag=path.stem)
    except (ValueError, OSError):
        return None
    return segmenter if segmenter.compat == compat else None


def _write_cache(segmenter: Any, path: Path) -> bool:
    """Saves ``segmenter`` at ``path`` (atomically); ``False`` when the cache folder is not writable."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        segmenter.save(path, tag=path.stem)
    except OSError:
        return False
    return True


class _StageClock:
    """Seconds of the command's steps since the process began (for ``--verbose``)."""

    def __init__(self, started: float) -> None:
        self.before_command = _process_age(started)  # the interpreter, gpu_text and argument parsing
        self.started = started
        self.mark = started
        self.seconds: dict[str, float] = {}
        self.cache = "off"  # what the segmenter cache did

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.mark
        self.mark = now

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def report(self, stats: Any, counts: dict[str, int], backend: str) -> str:
        """Where the time went: start-up steps, then each pipeline stage's busy and waiting seconds
        (the stages overlap, so their busy times add up to more than the pipeline's wall time)."""
        s = self.seconds
        join = s.get("join", 0.0)
        wall = time.perf_counter() - self.started + (self.before_command or 0.0)
        rate = counts["bytes_in"] / max(stats.wall, 1e-9) / 1e6
        lines = [f"time (seconds), backend {backend}, {counts['bytes_in'] / 1e6:.1f} MB of documents in, "
                 f"{counts['bytes_out'] / 1e6:.1f} MB out, {stats.items} batches:",
                 f"  start-up: interpreter and imports {_format(self.before_command, s['imports'])}, dictionary "
                 f"{s['dictionary']:.2f}, trie and weights {s['trie']:.2f} (segmenter cache: {self.cache})",
                 f"  read (file, decompress, split lines): {stats.read.busy:.2f} busy, "
                 f"{stats.read.waited_out:.2f} waiting for the segmenter",
                 f"  segment (pre-split, decode, trie, Viterbi, spans to host): {stats.compute.busy:.2f} busy, "
                 f"{stats.compute.waited_in:.2f} waiting for input, {stats.compute.waited_out:.2f} for the writer",
                 f"  join (Numba, words + spaces + newlines): {join:.2f}; write: {stats.write.busy - join:.2f}; "
                 f"writer waiting {stats.write.waited_in:.2f}",
                 f"  pipeline {stats.wall:.2f} wall ({rate:.1f} MB/s), process {wall:.2f} wall so far"]
        return "\n".join(lines)


def _format(seconds: float | None, more: float) -> str:
    return f"? + {more:.2f}" if seconds is None else f"{seconds + more:.2f}"


def _process_age(now: float) -> float | None:
    """Wall seconds from this process's start to ``now`` (a ``time.perf_counter()``), where the
    system says when it started (Linux's /proc); ``None`` elsewhere."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            # field 22, after the parenthesised command name: start time in clock ticks after boot
            started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
            age = float(uptime.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return None
    return age - (time.perf_counter() - now)


def cmd_train_dict(args: argparse.Namespace) -> int:
    """Learn word frequencies for the candidate words from the corpus (DictCut's Hard EM)."""
    from gpu_text.segment.training import DictionaryTrainer

    check_outputs([*args.corpus, args.candidates], [args.output])  # before the (long) training
    check_backend(args)
    with document_options(**reader_options(args)):
        candidates = [line.split()[0] for batch in read_documents([args.candidates]) for line in batch.to_pylist()
                      if line.strip()]
        trainer = DictionaryTrainer(target_size=args.target, min_count=args.min_count,
                                    sub_iterations=args.sub_iterations, chunk_bytes=chunk_bytes(args),
                                    backend=args.backend, progress=progress_enabled())
        dictionary = trainer.fit(candidates, args.corpus).dictionary_
    with atomic_outputs([args.output]) as (temp,):
        dictionary.save(temp)
    for step in trainer.history_:
        print(f"{step.step:>12}: {step.dictionary_size} words, {step.tokens} tokens", file=sys.stderr)
    print(f"wrote {len(dictionary)} words to {args.output}", file=sys.stderr)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    """Precision, recall, F1 (and IV/OOV recall with --words) of PRED against GOLD."""
    from gpu_text.metrics import read_segmented, score_words

    def read(path: str) -> list[list[str]]:
        return load_file(path, read_segmented, "segmented text")

    vocabulary = {w for line in read(args.words) for w in line} if args.words else None
    score = score_words(read(args.gold), read(args.pred), vocabulary)
    print(json.dumps(score.as_dict(), indent=2))
    return 0


def add_commands(subparsers: Any) -> None:
    """Register ``segment``, ``train-dict`` and ``score`` (see the module example)."""
    segment = add_command(subparsers, "segment", cmd_segment,
                          "dictionary word segmentation (DictCut), one document in, one line out")
    segment.add_argument("input", help="documents: .txt (one per line), .jsonl, .parquet, maybe compressed; "
                                       "'-' for stdin")
    segment.add_argument("output", help="words joined by spaces, one line per document ('-' for stdout)")
    segment.add_argument("--dict", help="dictionary: 'word<TAB>freq' or jieba's 'word freq [tag]' lines")
    segment.add_argument("--compat", choices=["dictcut", "jieba"], default=None,
                         help="lattice and tie rule: DictCut's (default) or jieba's HMM=False cut")
    segment.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                         help="malformed dictionary lines: stop with an error naming the line, or skip them")
    segment.add_argument("--verbose", action="store_true",
                         help="print where the time went (start-up, read, segment, join, write) on stderr")
    add_document_options(segment)
    add_backend_options(segment)

    train = add_command(subparsers, "train-dict", cmd_train_dict,
                        "learn word frequencies from raw text (DictCut's Hard EM)")
    train.add_argument("corpus", nargs="+", help="raw UTF-8 text, one sentence or document per line (maybe compressed)")
    train.add_argument("output", help="the dictionary to write, 'word<TAB>freq' lines")
    train.add_argument("--candidates", required=True, help="candidate words, one per line (first column)")
    train.add_argument("--target", type=positive_int, default=180_000, help="dictionary size to prune down to")
    train.add_argument("--min-count", type=positive_int, default=15,
                       help="multi-character words seen fewer times are dropped")
    train.add_argument("--sub-iterations", type=non_negative_int, default=2,
                       help="Hard EM rounds before each pruning and at the end")
    add_document_options(train, field=False)
    add_backend_options(train)

    score = add_command(subparsers, "score", cmd_score,
                        "word precision/recall/F1 of a segmentation (SIGHAN convention)")
    score.add_argument("gold", help="gold segmentation, words separated by whitespace")
    score.add_argument("pred", help="predicted segmentation of the same lines")
    score.add_argument("--words", help="training data (segmented) whose words count as in-vocabulary")
