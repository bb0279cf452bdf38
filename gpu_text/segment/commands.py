"""``gpu-text segment | train-dict | score``: dictionary word segmentation on the command line.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices)
['score', 'segment', 'train-dict']
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from gpu_text.cli_helpers import (add_backend_options, add_command, add_document_options, atomic_outputs,
                                  check_backend, check_outputs, chunk_bytes, failing_documents, load_file,
                                  non_negative_int, open_output, positive_int, progress_bar, progress_enabled,
                                  reader_options)
from gpu_text.documents import document_options, iter_documents, read_documents, total_bytes
from gpu_text.textio import NEWLINE


def cmd_segment(args: argparse.Namespace) -> int:
    """Stream IN document by document into OUT, each document's words joined by one space on a line."""
    from gpu_text.segment import Segmenter, load_dictionary

    check_outputs([args.input, args.dict], [args.output])
    check_backend(args)
    dictionary = None
    if args.dict:
        dictionary = load_file(args.dict, lambda p: load_dictionary(p, on_error=args.on_error), "dictionary")
        if dictionary.skipped:
            print(f"skipped {len(dictionary.skipped)} malformed dictionary lines (first: {dictionary.skipped[0]})",
                  file=sys.stderr)
    segmenter = Segmenter(dictionary, compat=args.compat)
    lines_in = lines_out = 0
    with open_output(args.output) as sink, progress_bar(total_bytes([args.input]), "segment") as bar:
        for path, first, batch in iter_documents([args.input], args.field, chunk_bytes(args), bar,
                                                 **reader_options(args)):
            with failing_documents(path, first, len(batch)):
                result = segmenter.segment(batch, backend=args.backend)
                starts, ends = result.starts.to_numpy(), result.ends.to_numpy()
                base = np.repeat(batch.offsets[:-1], np.diff(starts.offsets))
                text = join_spans(batch.data, starts.offsets, starts.values + base, ends.values + base)
            sink.write(text)
            lines_in += len(batch)
            lines_out += text.count(b"\n")
    if lines_in != lines_out:
        raise RuntimeError(f"read {lines_in} documents but wrote {lines_out} lines")
    print(f"segmented {lines_in} lines", file=sys.stderr)
    return 0


def join_spans(data: np.ndarray, row_offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray,
               separator: bytes = b" ") -> bytes:
    """Every row's spans of ``data`` joined by ``separator``, one ``\\n``-terminated line per row.

    ``starts``/``ends`` are absolute byte positions of non-empty spans, disjoint and ascending (as
    a segmentation's words are); ``row_offsets`` groups them into rows. Bounded memory for a long
    line: a few bytes per input byte and per span, no index per byte.

    >>> join_spans(np.frombuffer(b"abcde", np.uint8), np.array([0, 2, 2]), np.array([0, 3]), np.array([2, 5]))
    b'ab de\\n\\n'
    """
    if len(separator) != 1:
        raise ValueError("separator must be one byte")
    words_per_row = np.diff(row_offsets)
    # the bytes inside spans, in order: +1 where a span starts, -1 where one ends, summed
    inside = np.zeros(data.size + 1, np.int8)
    inside[starts] = 1
    inside[ends] -= 1
    kept = data[np.cumsum(inside[:-1], dtype=np.int8).view(bool)]
    del inside
    # then one byte after each span (the separator, or a newline after a row's last span) and a
    # lone newline for an empty row, inserted where their span or row ends in ``kept``
    kept_until = np.cumsum(ends - starts)
    after = np.full(starts.size, separator[0], np.uint8)
    after[row_offsets[1:][words_per_row > 0] - 1] = NEWLINE
    empty_at = np.concatenate([[0], kept_until])[row_offsets[:-1][words_per_row == 0]]
    out = np.insert(kept, np.concatenate([kept_until, empty_at]),
                    np.concatenate([after, np.full(empty_at.size, NEWLINE, np.uint8)]))
    return out.tobytes()


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
