"""``gpu-text word2vec train | eval | similar | cluster``: word vectors on the command line.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices["word2vec"]._subparsers._group_actions[0].choices)
['cluster', 'eval', 'similar', 'train']
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

from gpu_text.cli_helpers import add_command, load_file, non_negative_float, non_negative_int, positive_int, progress_bar


def _positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def cmd_train(args: argparse.Namespace) -> int:
    from gpu_text.word2vec.model import Word2Vec

    for path in args.corpus:
        if path != "-" and not os.path.isfile(path):
            raise ValueError(f"{path}: no such file")
    segmenter = None
    if args.segment_dict is not None:
        from gpu_text.segment import Segmenter, load_dictionary

        segmenter = load_file(args.segment_dict, lambda path: Segmenter(load_dictionary(path)),
                              "segmentation dictionary")
    model = Word2Vec(vector_size=args.size, window=args.window, min_count=args.min_count, sample=args.sample,
                     sg=int(args.skipgram), hs=int(args.negative == 0), negative=args.negative, alpha=args.alpha,
                     min_alpha=args.min_alpha, epochs=args.epochs, seed=args.seed, deterministic=args.deterministic,
                     compute_loss=True, compat=args.compat, segment=segmenter,
                     backend=args.backend or "auto")
    with progress_bar(args.epochs, "word2vec") as bar:
        bar.unit = "epoch"

        def report(entry: dict[str, Any]) -> None:
            bar.set_postfix(words_per_s=f"{entry['words_per_second']:,.0f}", alpha=f"{entry['alpha']:.5f}",
                            loss=f"{entry['loss']:.4g}")
            bar.update(1)

        model.fit(args.corpus if len(args.corpus) > 1 else args.corpus[0], progress=report)
    # written beside the target, then renamed: a failure leaves no partial file
    folder = os.path.dirname(os.path.abspath(args.output))
    suffix = ".bin" if args.output.endswith(".bin") else ".txt"
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=suffix)
    os.close(handle)
    try:
        model.wv_.save(temporary, binary=args.output.endswith(".bin"))
        os.replace(temporary, args.output)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    last = model.history_[-1]
    print(f"{len(model.wv_)} words x {args.size}, {model.vocab_.total_words} tokens, vocabulary "
          f"{model.vocab_seconds_:.1f}s, {last['words_per_second']:,.0f} words/s, loss {model.loss_:.4g}; "
          f"wrote {args.output}", file=sys.stderr)
    return 0


def _load(args: argparse.Namespace):
    from gpu_text.word2vec.keyed_vectors import KeyedVectors

    return load_file(args.vectors, lambda path: KeyedVectors.load(path, backend=args.backend or "cpu"),
                     "word2vec vectors")


def cmd_eval(args: argparse.Namespace) -> int:
    """Spearman/Pearson of every --similarity file and the accuracy of every --analogies file, as JSON."""
    if not args.similarity and not args.analogies:
        raise ValueError("nothing to evaluate: give --similarity FILE and/or --analogies FILE")
    wv = _load(args)
    result: dict[str, Any] = {}
    for path in args.similarity or []:
        score = load_file(path, wv.evaluate_word_pairs, "word-pair similarity")
        result[path] = {"pearson": score.pearson, "spearman": score.spearman, "oov_ratio": score.oov_ratio,
                        "pearson_pvalue": score.pearson_pvalue, "spearman_pvalue": score.spearman_pvalue}
    for path in args.analogies or []:
        accuracy, sections = load_file(path, wv.evaluate_word_analogies, "analogy")
        total = sections[-1]
        result[path] = {"accuracy": accuracy, "correct": len(total["correct"]),
                        "questions": len(total["correct"]) + len(total["incorrect"])}
    print(json.dumps(result, indent=2))
    return 0


def cmd_similar(args: argparse.Namespace) -> int:
    """The --topn nearest words of WORD, a ``word<TAB>cosine`` line each."""
    wv = _load(args)
    if args.word not in wv:
        raise ValueError(f"{args.word!r} is not in the vocabulary of {args.vectors}")
    for word, score in wv.most_similar(args.word, topn=args.topn):
        print(f"{word}\t{score:.6f}")
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    """Spherical k-means of the vectors: a ``word cluster`` line per word to --output."""
    from gpu_text.word2vec.cluster import SphericalKMeans, write_clusters

    wv = _load(args)
    if args.k > len(wv):
        raise ValueError(f"--k {args.k} is more than the {len(wv)} words of {args.vectors}")
    model = SphericalKMeans(n_clusters=args.k, max_iter=args.iterations, seed=args.seed,
                            backend=args.backend or "auto").fit(wv)
    write_clusters(args.output, wv.index_to_key, model.labels_)
    print(f"{len(wv)} words in {args.k} clusters after {model.n_iter_} iterations, mean cosine to the centroid "
          f"{model.similarity_:.4f}; wrote {args.output}", file=sys.stderr)
    return 0


def add_commands(subparsers: Any) -> None:
    """Register ``word2vec`` and its subcommands (see the module example)."""
    w2v = subparsers.add_parser("word2vec", help="word2vec: train, evaluate and query word vectors")
    commands = w2v.add_subparsers(dest="word2vec_command", required=True)
    train = add_command(commands, "train", cmd_train, "train CBOW or skip-gram vectors on text files")
    train.add_argument("corpus", nargs="+", help="text files, a document per line, whitespace-separated words")
    train.add_argument("--output", required=True, help="vectors to write: word2vec binary for *.bin, else text")
    train.add_argument("--segment-dict", metavar="D",
                       help="raw text (Chinese): cut every document into words with this dictionary's segmenter")
    model = train.add_mutually_exclusive_group()
    model.add_argument("--cbow", dest="skipgram", action="store_false", help="CBOW (the default)")
    model.add_argument("--skipgram", dest="skipgram", action="store_true", help="skip-gram")
    loss = train.add_mutually_exclusive_group()
    loss.add_argument("--hs", dest="negative", action="store_const", const=0, help="hierarchical softmax (default)")
    loss.add_argument("--negative", type=positive_int, default=0, help="negative sampling with N samples")
    train.set_defaults(negative=0, skipgram=False)  # store_false would otherwise default skipgram to True
    train.add_argument("--size", type=positive_int, default=100, help="vector dimensions (default 100)")
    train.add_argument("--window", type=positive_int, default=5)
    train.add_argument("--min-count", type=non_negative_int, default=5)
    train.add_argument("--sample", type=non_negative_float, default=1e-3)
    train.add_argument("--alpha", type=_positive_float, default=0.025)
    train.add_argument("--min-alpha", type=non_negative_float, default=1e-4)
    train.add_argument("--epochs", type=positive_int, default=5)
    train.add_argument("--seed", type=non_negative_int, default=1)
    train.add_argument("--compat", choices=["gensim"], default=None,
                       help="gensim 4.4's Huffman tie order, initial vectors and logistic table (default: word2vec.c's "
                            "tree, the seed's initial vectors, the exact logistic function)")
    train.add_argument("--deterministic", action="store_true",
                       help="bit-identical vectors for a seed (one sequential pass: no parallelism)")
    train.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                       help="default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable")
    evaluate = add_command(commands, "eval", cmd_eval, "word-pair similarity and analogy scores (gensim's rules)")
    evaluate.add_argument("vectors", help="word2vec text or binary file (*.bin)")
    evaluate.add_argument("--similarity", action="append", help="word1<TAB>word2<TAB>score file (repeatable)")
    evaluate.add_argument("--analogies", action="append", help="questions-words.txt-style file (repeatable)")
    evaluate.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None)
    similar = add_command(commands, "similar", cmd_similar, "nearest words by cosine")
    similar.add_argument("vectors", help="word2vec text or binary file (*.bin)")
    similar.add_argument("word")
    similar.add_argument("--topn", type=positive_int, default=10)
    similar.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None)
    cluster = add_command(commands, "cluster", cmd_cluster, "spherical k-means of the vectors (word cluster lines)")
    cluster.add_argument("vectors", help="word2vec text or binary file (*.bin)")
    cluster.add_argument("--k", type=positive_int, required=True, help="number of clusters")
    cluster.add_argument("--output", required=True, help="file of 'word cluster' lines")
    cluster.add_argument("--iterations", type=positive_int, default=50, help="at most this many rounds (default 50)")
    cluster.add_argument("--seed", type=non_negative_int, default=1)
    cluster.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None)
