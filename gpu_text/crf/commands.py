"""``gpu-text crf train | label | segment | eval``: the CRF on the command line.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices["crf"]._subparsers._group_actions[0].choices)
['eval', 'label', 'segment', 'train']
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from gpu_text.cli_helpers import (add_backend_options, add_command, add_debug_option, add_document_options,
                                  atomic_outputs, check_backend, check_outputs, chunk_bytes, failing_documents,
                                  load_file, non_negative_float, non_negative_int, open_output, positive_int,
                                  reader_options)
from gpu_text.documents import DEFAULT_CHUNK_BYTES, iter_documents

# characters labelled per CRF call in ``crf segment``: its features take ~550 bytes per character,
# so a whole --chunk-mb chunk at once would need hundreds of times the chunk (3.4 GB for 16 MiB)
SEGMENT_CHARACTERS = 1 << 18
# ``crf train --segmented`` penalties, chosen on the People's Daily dev split (last 10% of the
# month; benchmarks/crf_quality.py grid, default features, Wapiti's stopping window): dev word F1
# 0.9599 at rho1=0.1, 0.9581 at 0.5, 0.9540 at 1.0 (rho2=1e-4). Other data keeps CRF's own
# defaults (TRAIN_DEFAULTS).
SEGMENT_DEFAULTS = {"rho1": 0.1, "rho2": 1e-4}
TRAIN_DEFAULTS = {"rho1": 0.5, "rho2": 1e-4}
DEFAULT_COLUMNS = "fold,class"


def _lines(path: str, options: dict[str, Any], field: str = "text",
           chunk: int = DEFAULT_CHUNK_BYTES) -> Iterator[tuple[int, list[str]]]:
    """The documents of ``path`` (a line each in a text file), batch by batch, strictly UTF-8,
    each batch with the number of its first line."""
    for located in iter_documents([path], field, chunk, **options):
        texts = []
        for number, raw in enumerate(located.batch.to_bytes_list(), located.first):
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        yield located.first, texts


def _read(path: str, segmented: bool, options: dict[str, Any], labelled: bool = True, features: Any = None):
    from gpu_text.crf.data import read_conll, read_segmented_bmes

    # CoNLL columns and segmented text are text files, whatever their first line looks like
    lines = [line for _, batch in _lines(path, {**options, "format": "txt"}) for line in batch]
    if segmented:
        return read_segmented_bmes(lines, features=features)
    return read_conll(lines, labelled=labelled, source=path)


def _features(args: argparse.Namespace):
    """The segmentation columns of ``crf train --segmented`` (``--columns``, ``--dict``)."""
    from gpu_text.crf.segmentation import DICTIONARY_COLUMNS, SegmentationFeatures

    columns = [c for c in args.columns.split(",") if c]
    if any(c in DICTIONARY_COLUMNS for c in columns):
        raise ValueError(f"--columns: the dictionary columns {DICTIONARY_COLUMNS} come with --dict FILE")
    if args.dict is None:
        return SegmentationFeatures(columns)
    from gpu_text.segment import load_dictionary

    return SegmentationFeatures.with_dictionary(load_file(args.dict, load_dictionary, "dictionary").words, columns)


def cmd_train(args: argparse.Namespace) -> int:
    from gpu_text.crf.model import CRF

    check_outputs([args.train, args.dev, args.pattern, args.dict], [args.model])  # before the (long) training
    check_backend(args)
    if not args.segmented and (args.dict is not None or args.columns != DEFAULT_COLUMNS):
        raise ValueError("--dict and --columns are segmentation options: they need --segmented")
    features = _features(args) if args.segmented else None
    pattern = load_file(args.pattern, _read_pattern, "pattern") if args.pattern else None  # before the data
    if pattern is None and features is not None:
        pattern = features.pattern()  # folded characters + classes (+ dictionary): no pattern to write
    options = reader_options(args)
    X, y = _read(args.train, args.segmented, options, features=features)
    if not X:
        raise ValueError(f"{args.train}: no training sequences")
    X_dev, y_dev = _read(args.dev, args.segmented, options, features=features) if args.dev else (None, None)
    settings = {**(SEGMENT_DEFAULTS if args.segmented else TRAIN_DEFAULTS),
                **{k: v for k, v in (("rho1", args.rho1), ("rho2", args.rho2)) if v is not None}}
    crf = CRF(pattern=pattern, algorithm=args.algorithm, history=args.history, max_linesearch=args.max_linesearch,
              max_iterations=args.max_iterations, backend=args.backend, verbose=True, **settings).fit(X, y, X_dev, y_dev)
    if features is not None:
        crf.segmentation_ = features  # stored with the model: segment rebuilds the same columns
    with atomic_outputs([args.model]) as (temp,):
        crf.save(temp)
    print(f"{crf.n_unigram_} unigram and {crf.n_bigram_} bigram observations, {len(crf.labels_)} labels, "
          f"{crf.history_[-1]['active_features'] if crf.history_ else 0} active weights, "
          f"{crf.train_seconds_:.1f}s; wrote {args.model}", file=sys.stderr)
    return 0


def _read_pattern(path: str) -> str:
    from gpu_text.crf.patterns import read_pattern_file  # checked here: errors name the file and line

    return read_pattern_file(path)


def _load(args: argparse.Namespace):
    from gpu_text.crf.model import CRF

    check_backend(args)
    if str(args.model).lower().endswith(".wac"):  # the seed's (Wapic's) text model
        from gpu_text.crf.wapic_model import load_wapic

        return load_file(args.model, lambda path: load_wapic(path, backend=args.backend), "Wapic model")
    return load_file(args.model, lambda path: CRF.load(path, backend=args.backend), "CRF model")


def cmd_label(args: argparse.Namespace) -> int:
    """Each token line of IN with its predicted label appended (Wapiti's output)."""
    check_outputs([args.input, args.model], [args.output])
    crf = _load(args)
    X, _ = _read(args.input, False, reader_options(args), labelled=args.labelled)
    predicted = crf.predict(X)
    with open_output(args.output) as sink:
        sink.write("".join("".join(" ".join(list(tok) + [lab]) + "\n" for tok, lab in zip(sentence, labels)) + "\n"
                           for sentence, labels in zip(X, predicted)).encode("utf-8"))
    return 0


def cmd_segment(args: argparse.Namespace) -> int:
    """Raw text in, words joined by spaces out, one line per line (BMES models; empty lines stay,
    in order), streamed: a --chunk-mb chunk of input at a time, labelled
    :data:`SEGMENT_CHARACTERS` at a time, so memory is bounded whatever the file's size."""
    check_outputs([args.input, args.model], [args.output])
    crf = _load(args)
    lines = characters = 0
    started = time.perf_counter()
    with open_output(args.output) as sink:
        for first, texts in _lines(args.input, reader_options(args), args.field, chunk_bytes(args)):
            for start, stop in _slices(texts, SEGMENT_CHARACTERS):
                with failing_documents(args.input, first + start, stop - start):
                    lines_out = crf.segment_text(texts[start:stop])
                sink.write(lines_out.encode("utf-8"))
            lines += len(texts)
            characters += sum(map(len, texts))
    seconds = time.perf_counter() - started
    print(f"segmented {lines} lines, {characters} characters in {seconds:.2f}s "
          f"({characters / max(seconds, 1e-9):,.0f} characters/s after loading the model)", file=sys.stderr)
    return 0


def _slices(texts: list[str], characters: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` runs of ``texts`` of about ``characters`` characters (a longer text alone).

    >>> list(_slices(["ab", "c", "defg", "h"], 3))
    [(0, 2), (2, 3), (3, 4)]
    """
    start, size = 0, 0
    for i, text in enumerate(texts):
        if size and size + len(text) > characters:
            yield start, i
            start, size = i, 0
        size += len(text)
    if start < len(texts):
        yield start, len(texts)


def cmd_eval(args: argparse.Namespace) -> int:
    """Token accuracy on labelled data, plus word F1 for segmented text."""
    from gpu_text.crf.data import bmes_to_words
    from gpu_text.metrics import score_words

    crf = _load(args)
    X, y = _read(args.input, args.segmented, reader_options(args))
    features = getattr(crf, "segmentation_", None) if args.segmented else None
    # a segmentation model sees its own columns; the words are scored on the raw characters
    predicted = crf.predict(features.tokens(["".join(t[0] for t in s) for s in X]) if features is not None else X)
    tokens = sum(map(len, y))
    result: dict = {"sentences": len(X), "tokens": tokens,
                    "token_accuracy": sum(p == g for ps, gs in zip(predicted, y) for p, g in zip(ps, gs)) / max(tokens, 1)}
    if args.segmented:
        chars = [[t[0] for t in s] for s in X]
        result.update(score_words([bmes_to_words(c, t) for c, t in zip(chars, y)],
                                  [bmes_to_words(c, t) for c, t in zip(chars, predicted)]).as_dict())
    print(json.dumps(result, indent=2))
    return 0


def add_commands(subparsers: Any) -> None:
    """Register ``crf`` and its subcommands (see the module example)."""
    crf = subparsers.add_parser("crf", help="linear-chain CRF: train, label, segment, eval")
    add_debug_option(crf)
    commands = crf.add_subparsers(dest="crf_command", required=True)
    train = add_command(commands, "train", cmd_train,
                        "train a model on CoNLL columns or (--segmented) segmented text")
    train.add_argument("train", help="training data ('-' for stdin)")
    train.add_argument("model", help="model file to write (text)")
    train.add_argument("--segmented", action="store_true", help="input is word-segmented text, trained as BMES")
    train.add_argument("--pattern", help="pattern file (default with --segmented: Wapic's character window over "
                                         "width-folded characters, plus character classes and --dict features)")
    train.add_argument("--columns", default=DEFAULT_COLUMNS,
                       help="--segmented: the token columns, comma-separated, of char (raw), fold, class "
                            f"(default {DEFAULT_COLUMNS}; 'char' alone is Wapic's raw characters)")
    train.add_argument("--dict", help="--segmented: a word<TAB>freq lexicon; adds dictionary begin/end/inside "
                                      "columns, stored with the model")
    train.add_argument("--dev", help="development data for the per-iteration error and the stopping rule")
    train.add_argument("--algorithm", choices=["auto", "l-bfgs", "owl-qn", "sgd-l1"], default="auto",
                       help="auto: OWL-QN when --rho1 > 0, else L-BFGS")
    train.add_argument("--rho1", type=non_negative_float, default=None,
                       help=f"L1 penalty (default {SEGMENT_DEFAULTS['rho1']} with --segmented, else "
                            f"{TRAIN_DEFAULTS['rho1']})")
    train.add_argument("--rho2", type=non_negative_float, default=None,
                       help=f"L2 penalty (default {SEGMENT_DEFAULTS['rho2']} with --segmented, else "
                            f"{TRAIN_DEFAULTS['rho2']})")
    train.add_argument("--history", type=positive_int, default=5, help="L-BFGS history size")
    train.add_argument("--max-linesearch", type=positive_int, default=40)
    train.add_argument("--max-iterations", type=non_negative_int, default=100)
    add_document_options(train, field=False, format=False)
    add_backend_options(train)
    label = _model_command(commands, "label", "append the predicted label to every token line", cmd_label)
    label.add_argument("--labelled", action="store_true", help="the input's last column is a label: drop it")
    label.add_argument("output")
    segment = _model_command(commands, "segment", "raw text in, words joined by spaces out (BMES model)", cmd_segment)
    segment.add_argument("output")
    evaluate = _model_command(commands, "eval", "token accuracy (and word F1 with --segmented) as JSON", cmd_eval)
    evaluate.add_argument("--segmented", action="store_true")
    commands.metavar = "{" + ",".join(commands.choices) + "}"  # names them when none is given


def _model_command(commands: Any, name: str, description: str, run: Any) -> argparse.ArgumentParser:
    parser = add_command(commands, name, run, description)
    parser.add_argument("--model", required=True, help="a model written by 'gpu-text crf train' (or, for "
                                                        "segment, a Wapic .wac model)")
    parser.add_argument("input", help="text, a document per line (.jsonl/.json/.parquet too for segment; '-' for "
                                      "stdin)")
    add_document_options(parser, field=name == "segment", format=name == "segment")
    add_backend_options(parser)
    return parser
