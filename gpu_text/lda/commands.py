"""``gpu-text lda train | infer | topics``: topic models on the command line.

- ``train CORPUS... --topics K --iterations N --output DIR``: reads the corpus (text files of a
  document per line, whitespace-split words, or raw Chinese with ``--segment-dict``; or LDA-C files,
  ``--vocabulary`` naming their ids), builds the vocabulary (``--min-count``, ``--max-df``,
  ``--stop-words``), fits the model and writes ``DIR/model.npz`` (what ``infer`` and ``topics``
  load) and the seed's files ``DIR/model.vocab``, ``model.phi``, ``model.theta``, plus
  ``model.pyldavis.npz``. A progress bar shows the iterations with tokens/s and the
  log-likelihood per token; a summary line goes to stderr.
- ``infer --model DIR/model.npz CORPUS... --output F``: the topic mixture of every document (fold-in
  with the topics fixed; words outside the model's vocabulary dropped), a ``.theta`` text file, or
  ``.npy`` for a name ending so; ``--perplexity`` also reports the held-out perplexity (document
  completion).
- ``topics --model DIR/model.npz [--top N] [--coherence REF...]``: a line per topic, ``Topic k:``
  and its top words; with ``--coherence`` its NPMI (or ``--measure c_v``) over the reference corpus,
  and the mean on stderr. ``--json`` prints it all as JSON.

Every output is written under a temporary name and renamed when complete; errors are one line,
``gpu-text lda <command>: error: ...``, exit status 2.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices["lda"]._subparsers._group_actions[0].choices)
['infer', 'topics', 'train']
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from gpu_text.cli_helpers import (add_command, add_document_options, atomic_outputs, check_backend, check_outputs,
                                  fraction, load_file, megabytes, non_negative_int, positive_int, progress_bar,
                                  reader_options)

MODEL_NAME = "model"
SAMPLERS = ("auto", "dense", "sparse")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _check_inputs(paths: list[str]) -> None:
    for path in paths:
        if path != "-" and not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")


def _segmenter(args: argparse.Namespace) -> Any:
    if getattr(args, "segment_dict", None) is None:
        return None
    from gpu_text.segment import Segmenter, load_dictionary

    return load_file(args.segment_dict, lambda path: Segmenter(load_dictionary(path)), "segmentation dictionary")


def _read_corpus(args: argparse.Namespace, paths: list[str], segmenter: Any, **vocabulary: Any) -> Any:
    """The corpus of ``paths`` through the project's document reader, with a byte progress bar."""
    from gpu_text.documents import document_options, total_bytes
    from gpu_text.lda.corpus import as_corpus

    with document_options(**reader_options(args)), progress_bar(total_bytes(paths), "read") as bar:
        return as_corpus(paths if len(paths) > 1 else paths[0], segment=segmenter, field=args.field,
                         chunk_bytes=args.chunk_mb << 20, progress=bar, backend=args.backend or "auto",
                         **vocabulary)


def _load_model(args: argparse.Namespace) -> Any:
    from gpu_text.lda.model import LDA

    if not os.path.isfile(args.model):
        raise ValueError(f"{args.model}: no such file")
    return load_file(args.model, LDA.load, "LDA model")


def cmd_train(args: argparse.Namespace) -> int:
    from gpu_text.lda.files import pyldavis_data, save_pyldavis, write_phi, write_theta, write_vocab
    from gpu_text.lda.model import LDA

    _check_inputs(args.corpus + [p for p in (args.stop_words, args.vocabulary) if p])
    check_backend(args)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise ValueError(f"{args.output}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(parent):
        raise ValueError(f"{args.output}: the parent directory {parent} does not exist")
    names = [os.path.join(args.output, f"{MODEL_NAME}{suffix}")
             for suffix in (".npz", ".vocab", ".phi", ".theta", ".pyldavis.npz")]
    if os.path.isdir(args.output):
        check_outputs(args.corpus, names)
    segmenter = _segmenter(args)
    options: dict[str, Any] = {}
    if args.vocabulary:
        if args.min_count > 1 or args.max_df < 1 or args.stop_words:
            raise ValueError("--vocabulary fixes the words: --min-count, --max-df and --stop-words build one")
        options["vocabulary"] = args.vocabulary
    else:
        options.update(min_count=args.min_count, max_df=args.max_df, stop_words=args.stop_words)
    corpus = _read_corpus(args, args.corpus, segmenter, **options)
    if corpus.n_tokens == 0:
        pruned = "" if args.vocabulary else f" after pruning (--min-count {args.min_count}, --max-df {args.max_df})"
        raise ValueError(f"{' '.join(args.corpus)}: the corpus has no tokens{pruned}")
    model = LDA(n_topics=args.topics, alpha=args.alpha, beta=args.beta, n_iter=args.iterations, seed=args.seed,
                sampler=args.sampler, backend=args.backend or "auto", eval_every=args.eval_every,
                optimize_alpha=args.optimize_alpha)
    tick = time.perf_counter()
    with progress_bar(args.iterations, "lda") as bar:
        bar.unit, bar.unit_scale, bar.unit_divisor = "it", False, 1000
        done = [0]

        def report(entry: Any) -> None:
            info = entry if isinstance(entry, dict) else {}
            it = int(info.get("iteration", done[0] + 1))
            postfix = {}
            if info.get("tokens_per_second") is not None:
                postfix["tokens_per_s"] = f"{info['tokens_per_second']:,.0f}"
            if info.get("loglikelihood") is not None:
                postfix["ll"] = f"{info['loglikelihood']:.4f}"
            if postfix:
                bar.set_postfix(**postfix)
            bar.update(max(it - done[0], 0))
            done[0] = max(done[0], it)

        model.fit(corpus, progress=report)
    seconds = time.perf_counter() - tick
    os.makedirs(args.output, exist_ok=True)
    with atomic_outputs(names) as temps:  # all five renamed into place together, or none
        model.save(temps[0])
        vocabulary = list(model.vocabulary_)
        write_vocab(temps[1], vocabulary)
        write_phi(temps[2], model.topic_word_, vocabulary, top=args.phi_top)
        write_theta(temps[3], model.doc_topic_)
        save_pyldavis(temps[4], pyldavis_data(model))
    ll = model.loglikelihood_[-1][1] if model.loglikelihood_ else float("nan")
    print(f"{args.topics} topics, {corpus.n_docs} documents, {corpus.n_tokens} tokens, {corpus.n_words} words; "
          f"{args.iterations} iterations in {seconds:.1f}s, {corpus.n_tokens * args.iterations / seconds:,.0f} "
          f"tokens/s, log-likelihood per token {ll:.4f}; wrote {args.output}/{MODEL_NAME}.*", file=sys.stderr)
    return 0


def cmd_infer(args: argparse.Namespace) -> int:
    import numpy as np

    from gpu_text.lda.files import write_theta

    _check_inputs(args.corpus)
    check_backend(args)
    check_outputs(args.corpus + [args.model], [args.output])
    model = _load_model(args)
    corpus = _read_corpus(args, args.corpus, _segmenter(args), vocabulary=model.vocabulary_)
    theta = model.transform(corpus, n_iter=args.iterations)
    if args.output.endswith(".npy"):
        with atomic_outputs([args.output]) as (temp,), open(temp, "wb") as f:
            np.save(f, np.asarray(theta, dtype=np.float64), allow_pickle=False)
    else:
        write_theta(args.output, theta)
    message = (f"{corpus.n_docs} documents, {corpus.n_tokens} tokens ({corpus.n_unknown} outside the vocabulary, "
               f"dropped)")
    if args.perplexity:
        message += f", held-out perplexity {model.perplexity(corpus):.2f} (document completion)"
    print(f"{message}; wrote {args.output}", file=sys.stderr)
    return 0


def cmd_topics(args: argparse.Namespace) -> int:
    from gpu_text.lda.coherence import topic_coherence

    _check_inputs(args.coherence or [])
    check_backend(args)
    model = _load_model(args)
    topics = model.top_words(args.top)
    scores = None
    if args.coherence:
        reference = _read_corpus(args, args.coherence, _segmenter(args))
        scores = topic_coherence(topics, reference, args.measure, args.window, windows=args.windows)
    if args.json:
        out: dict[str, Any] = {"topics": [{"topic": k, "words": words} for k, words in enumerate(topics)]}
        if scores is not None:
            for entry, score in zip(out["topics"], scores.tolist()):
                entry[args.measure] = score
            out[args.measure] = float(scores.mean())
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    for k, words in enumerate(topics):
        score = f" ({args.measure} {scores[k]:.4f})" if scores is not None else ""
        print(f"Topic {k}{score}: {' '.join(words)}")
    if scores is not None:
        print(f"mean {args.measure} {scores.mean():.4f} over {len(topics)} topics (top {args.top} words)",
              file=sys.stderr)
    return 0


def _reader_arguments(parser: argparse.ArgumentParser) -> None:
    add_document_options(parser)
    parser.add_argument("--chunk-mb", type=megabytes, default=16,
                        help="MiB of input read per batch, 1 to 1048576 (bounds memory; default 16)")
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                        help="default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable")


def add_commands(subparsers: Any) -> None:
    """Register ``lda`` and its subcommands (see the module example)."""
    lda = subparsers.add_parser("lda", help="LDA topic models: train, infer topic mixtures, show topics")
    commands = lda.add_subparsers(dest="lda_command", required=True)
    train = add_command(commands, "train", cmd_train, "fit an LDA topic model (collapsed Gibbs sampling)")
    train.add_argument("corpus", nargs="+",
                       help="text files of a document per line (whitespace-separated words), or LDA-C files")
    train.add_argument("--topics", type=positive_int, required=True, metavar="K", help="number of topics")
    train.add_argument("--iterations", type=positive_int, default=100, metavar="N", help="Gibbs sweeps (default 100)")
    train.add_argument("--output", required=True, metavar="DIR",
                       help="folder (created if missing) for model.npz, model.vocab, .phi, .theta, .pyldavis.npz")
    train.add_argument("--segment-dict", metavar="D",
                       help="raw text (Chinese): cut every document into words with this dictionary's segmenter")
    train.add_argument("--alpha", type=_positive_float, default=0.1, help="document-topic prior (default 0.1)")
    train.add_argument("--beta", type=_positive_float, default=0.01, help="topic-word prior (default 0.01)")
    train.add_argument("--optimize-alpha", action="store_true", help="learn an asymmetric alpha")
    train.add_argument("--seed", type=non_negative_int, default=1)
    train.add_argument("--eval-every", type=positive_int, default=10, metavar="E",
                       help="log-likelihood every E iterations (default 10)")
    train.add_argument("--sampler", choices=SAMPLERS, default="auto", help="default: chosen by K and backend")
    train.add_argument("--min-count", type=positive_int, default=1, help="drop words seen fewer times (default 1)")
    train.add_argument("--max-df", type=fraction, default=1.0,
                       help="drop words in more than this fraction of the documents (default 1: none)")
    train.add_argument("--stop-words", metavar="FILE", help="words to drop, one per line")
    train.add_argument("--vocabulary", metavar="FILE",
                       help="the words, one per line (line i names id i: the names of an LDA-C corpus's ids)")
    train.add_argument("--phi-top", type=positive_int, default=None, metavar="N",
                       help="write the N most probable words of every topic to model.phi (default: all)")
    _reader_arguments(train)
    infer = add_command(commands, "infer", cmd_infer, "topic mixtures of new documents (the topics fixed)")
    infer.add_argument("corpus", nargs="+", help="text files of a document per line, or LDA-C files")
    infer.add_argument("--model", required=True, help="model.npz written by 'gpu-text lda train'")
    infer.add_argument("--output", required=True, metavar="F",
                       help="a line of topic probabilities per document (.theta text), or .npy")
    infer.add_argument("--iterations", type=positive_int, default=50, help="fold-in sweeps (default 50)")
    infer.add_argument("--segment-dict", metavar="D", help="raw text: segment with this dictionary")
    infer.add_argument("--perplexity", action="store_true",
                       help="also report the held-out perplexity (fold in on the first half of every document, "
                            "score the rest)")
    _reader_arguments(infer)
    topics = add_command(commands, "topics", cmd_topics, "top words of every topic, and their coherence")
    topics.add_argument("--model", required=True, help="model.npz written by 'gpu-text lda train'")
    topics.add_argument("--top", type=positive_int, default=10, metavar="N", help="words per topic (default 10)")
    topics.add_argument("--coherence", nargs="+", metavar="REF", help="reference corpus files for coherence")
    topics.add_argument("--measure", choices=["c_npmi", "c_v"], default="c_npmi",
                        help="coherence measure (gensim's definitions; default c_npmi)")
    topics.add_argument("--window", type=positive_int, default=None,
                        help="sliding window (default gensim's: 10 for c_npmi, 110 for c_v)")
    topics.add_argument("--windows", choices=["gensim", "boolean"], default="gensim",
                        help="window presence as gensim counts it (default) or the plain definition")
    topics.add_argument("--segment-dict", metavar="D", help="raw reference text: segment with this dictionary")
    topics.add_argument("--json", action="store_true", help="machine-readable output")
    _reader_arguments(topics)


__all__ = ["add_commands", "cmd_infer", "cmd_topics", "cmd_train"]
