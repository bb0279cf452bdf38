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
from collections.abc import Iterator
from typing import Any

from gpu_text.cli_helpers import (add_backend_options, add_command, add_field_option, chunk_bytes, load_file,
                                  non_negative_float, non_negative_int, open_output, positive_int)
from gpu_text.documents import DEFAULT_CHUNK_BYTES, read_documents


def _lines(path: str, field: str = "text", chunk: int = DEFAULT_CHUNK_BYTES) -> Iterator[list[str]]:
    """The documents of ``path`` (a line each in a text file), batch by batch, strictly UTF-8."""
    for batch in read_documents([path], field, chunk):
        try:
            yield batch.to_pylist(errors="strict")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start} of a line)") from None


def _read(path: str, segmented: bool, labelled: bool = True):
    from gpu_text.crf.data import read_conll, read_segmented_bmes

    lines = [line for batch in _lines(path) for line in batch]
    return read_segmented_bmes(lines) if segmented else read_conll(lines, labelled=labelled)


def cmd_train(args: argparse.Namespace) -> int:
    from gpu_text.crf.model import CRF

    X, y = _read(args.train, args.segmented)
    X_dev, y_dev = _read(args.dev, args.segmented) if args.dev else (None, None)
    pattern = load_file(args.pattern, lambda p: open(p, encoding="utf-8").read(), "pattern") if args.pattern else None
    crf = CRF(pattern=pattern, algorithm=args.algorithm, rho1=args.rho1, rho2=args.rho2, history=args.history,
              max_linesearch=args.max_linesearch, max_iterations=args.max_iterations, backend=args.backend,
              verbose=True).fit(X, y, X_dev, y_dev)
    crf.save(args.model)
    print(f"{crf.n_unigram_} unigram and {crf.n_bigram_} bigram observations, {len(crf.labels_)} labels, "
          f"{crf.history_[-1]['active_features'] if crf.history_ else 0} active weights, "
          f"{crf.train_seconds_:.1f}s; wrote {args.model}", file=sys.stderr)
    return 0


def _load(args: argparse.Namespace):
    from gpu_text.crf.model import CRF

    return load_file(args.model, lambda path: CRF.load(path, backend=args.backend), "CRF model")


def cmd_label(args: argparse.Namespace) -> int:
    """Each token line of IN with its predicted label appended (Wapiti's output)."""
    crf = _load(args)
    X, _ = _read(args.input, False, labelled=args.labelled)
    predicted = crf.predict(X)
    with open_output(args.output) as sink:
        sink.write("".join("".join(" ".join(list(tok) + [lab]) + "\n" for tok, lab in zip(sentence, labels)) + "\n"
                           for sentence, labels in zip(X, predicted)).encode("utf-8"))
    return 0


def cmd_segment(args: argparse.Namespace) -> int:
    """Raw text in, words joined by spaces out, one line per line (BMES models)."""
    crf = _load(args)
    lines = 0
    with open_output(args.output) as sink:
        for batch in _lines(args.input, args.field, chunk_bytes(args)):
            sink.write("".join(" ".join(words) + "\n" for words in crf.segment(batch)).encode("utf-8"))
            lines += len(batch)
    print(f"segmented {lines} lines", file=sys.stderr)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    """Token accuracy on labelled data, plus word F1 for segmented text."""
    from gpu_text.crf.data import bmes_to_words
    from gpu_text.metrics import score_words

    crf = _load(args)
    X, y = _read(args.input, args.segmented)
    predicted = crf.predict(X)
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
    commands = crf.add_subparsers(dest="crf_command", required=True)
    train = add_command(commands, "train", cmd_train,
                        "train a model on CoNLL columns or (--segmented) segmented text")
    train.add_argument("train", help="training data ('-' for stdin)")
    train.add_argument("model", help="model file to write (text)")
    train.add_argument("--segmented", action="store_true", help="input is word-segmented text, trained as BMES")
    train.add_argument("--pattern", help="pattern file (default: Wapic's Chinese segmentation pattern)")
    train.add_argument("--dev", help="development data for the per-iteration error and the stopping rule")
    train.add_argument("--algorithm", choices=["auto", "l-bfgs", "owl-qn", "sgd-l1"], default="auto",
                       help="auto: OWL-QN when --rho1 > 0, else L-BFGS")
    train.add_argument("--rho1", type=non_negative_float, default=0.5, help="L1 penalty")
    train.add_argument("--rho2", type=non_negative_float, default=1e-4, help="L2 penalty")
    train.add_argument("--history", type=positive_int, default=5, help="L-BFGS history size")
    train.add_argument("--max-linesearch", type=positive_int, default=40)
    train.add_argument("--max-iterations", type=non_negative_int, default=100)
    add_backend_options(train)
    label = _model_command(commands, "label", "append the predicted label to every token line", cmd_label)
    label.add_argument("--labelled", action="store_true", help="the input's last column is a label: drop it")
    label.add_argument("output")
    segment = _model_command(commands, "segment", "raw text in, words joined by spaces out (BMES model)", cmd_segment)
    segment.add_argument("output")
    add_field_option(segment)
    evaluate = _model_command(commands, "eval", "token accuracy (and word F1 with --segmented) as JSON", cmd_eval)
    evaluate.add_argument("--segmented", action="store_true")
    commands.metavar = "{" + ",".join(commands.choices) + "}"  # names them when none is given


def _model_command(commands: Any, name: str, description: str, run: Any) -> argparse.ArgumentParser:
    parser = add_command(commands, name, run, description)
    parser.add_argument("--model", required=True, help="a model written by 'gpu-text crf train'")
    parser.add_argument("input", help="text, a document per line (.jsonl/.parquet too for segment; '-' for stdin)")
    add_backend_options(parser)
    return parser
