"""``gpu-text train-tokenizer | tokenize``: train a BPE vocabulary, and bulk-tokenize files with it.

>>> import argparse
>>> sub = argparse.ArgumentParser().add_subparsers()
>>> add_commands(sub)
>>> sorted(sub.choices)
['tokenize', 'train-tokenizer']
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from gpu_text.cli_helpers import (add_backend_options, add_command, add_document_options, atomic_outputs,
                                  check_backend, check_outputs, chunk_bytes, fraction, load_file, positive_int,
                                  progress_enabled, reader_options)
from gpu_text.documents import document_options
from gpu_text.outputs import FORMATS

INPUTS_HELP = (".txt (a document per line), .jsonl/.json or .parquet (see --field), each maybe "
               "gzip/zstd/bz2-compressed (told by content, see --format); '-' for stdin")


def cmd_train_tokenizer(args: argparse.Namespace) -> int:
    """Trains on ``args.inputs`` and writes ``args.output``; prints a summary to stderr.

    >>> import tempfile, pathlib
    >>> from gpu_text.cli import main
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "c.txt").write_text("ab ab\\n")
    >>> main(["train-tokenizer", str(d / "c.txt"), "-o", str(d / "m.model"), "--vocab-size", "263",
    ...       "--character-coverage", "1"])
    0
    """
    from gpu_text.tokenizer.bpe_trainer import BPETrainer

    cn_dictionary = args.cn if args.cn and os.path.exists(args.cn) else None
    check_outputs([*args.inputs, cn_dictionary], [args.output])  # before the (long) training
    check_backend(args)
    extra = [token for token in args.extra_tokens.split(",") if token]
    trainer = BPETrainer(vocab_size=args.vocab_size, character_coverage=args.character_coverage,
                         max_piece_size=args.max_piece_size, min_count=args.min_count, split=args.split,
                         digits=args.digits, cn=args.cn, normalizer=args.normalizer, reconstruct=args.reconstruct,
                         extra_tokens=extra, progress=progress_enabled(), chunk_bytes=chunk_bytes(args),
                         backend=args.backend)
    with document_options(**reader_options(args)):
        model = trainer.fit(args.inputs, field=args.field).model_
    with atomic_outputs([args.output]) as (temp,):
        model.save(temp)
    stats = model.stats
    print(f"wrote {len(model)} pieces ({model.n_merges} merges, {len(model.required_chars)} characters) to "
          f"{args.output}; {stats['pre_tokens']} distinct pre-tokens, counting {stats['count_seconds']:.1f} s, "
          f"merging {stats['merge_seconds']:.1f} s", file=sys.stderr)
    return 0


def cmd_tokenize(args: argparse.Namespace) -> int:
    """``gpu-text tokenize --model M IN... OUT``: a JSON summary (counts, throughput) on stderr.

    >>> import tempfile, pathlib
    >>> from gpu_text.cli import main
    >>> from gpu_text.demo import MODEL
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "docs.txt").write_text("hello world\\n\\nbye\\n")
    >>> main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(d / "docs.txt"), str(d / "ids.parquet")])
    0
    """
    from gpu_text.outputs import check_options, output_format
    from gpu_text.tokenizer.bulk import load_tokenizer, output_paths, tokenize_files

    fmt = output_format(args.output, args.output_format)
    check_options(fmt, args.offsets, args.append_eod, args.pack)  # before the model is loaded
    check_outputs([args.model, *args.inputs], output_paths(args.output, fmt, stats=not args.no_stats))
    check_backend(args)
    tokenizer = load_file(args.model, load_tokenizer, "tokenizer model")
    for flag, name, special in ((args.add_bos, "bos", tokenizer.bos_id), (args.add_eos, "eos", tokenizer.eos_id)):
        if flag and special < 0:  # said before any output exists, naming the model
            raise ValueError(f"{args.model}: the model has no {name} piece, so --add-{name} cannot be honoured")
    for flag, option in ((args.append_eod, "--append-eod"), (args.pack, "--pack")):
        if flag and tokenizer.eos_id < 0:
            raise ValueError(f"{args.model}: the model has no eos piece, so {option} cannot end documents with it")
    summary = tokenize_files(tokenizer, args.inputs, args.output, field=args.field, with_offsets=args.offsets,
                             backend=args.backend, chunk_bytes=chunk_bytes(args), add_bos=args.add_bos,
                             add_eos=args.add_eos, progress=progress_enabled(), output_format=fmt,
                             append_eod=args.append_eod, pack=args.pack, stats=not args.no_stats,
                             **reader_options(args))
    print(json.dumps(summary), file=sys.stderr)
    return 0


def add_commands(subparsers: Any) -> None:
    """Register ``train-tokenizer`` and ``tokenize`` (see the module example).

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["train-tokenizer", "a.txt", "--output", "m.model"])
    >>> args.vocab_size, args.split, args.normalizer
    (8000, 'word', 'no')
    """
    train = add_command(
        subparsers, "train-tokenizer", cmd_train_tokenizer,
        "train a BPE vocabulary (SentencePiece's BPE trainer) into a model file",
        description="Streams the inputs, counts pre-tokens and learns BPE merges. --vocab-size is the whole "
                    "vocabulary: 3 specials, 256 byte pieces, the extra tokens, the merges and the required "
                    "characters.")
    train.add_argument("inputs", nargs="+", help=INPUTS_HELP)
    train.add_argument("--output", "-o", required=True, help="the model file to write (the seed's text format)")
    train.add_argument("--vocab-size", type=positive_int, default=8000,
                       help="pieces in the model, the 259 special and byte pieces included (default 8000)")
    train.add_argument("--character-coverage", type=fraction, default=0.9995,
                       help="share of characters (by frequency) kept as pieces; the rest never merge")
    train.add_argument("--max-piece-size", type=positive_int, default=18, help="longest piece, in bytes")
    train.add_argument("--min-count", type=positive_int, default=1, help="stop when the best pair is seen fewer times")
    train.add_argument("--split", choices=["word", "isolate", "whitespace"], default="word", help="pre-tokenizer split")
    train.add_argument("--digits", choices=["keep", "split"], default="keep", help="digit runs whole or one per digit")
    train.add_argument("--cn", default=None,
                       help="Han runs: unset keeps them whole, 'char' cuts per character, a dictionary path cuts words")
    train.add_argument("--normalizer", default="no", help="no, NFKC, NMT_NFKC, NFKC_CF or NMT_NFKC_CF")
    train.add_argument("--reconstruct", action="store_true", help="keep every space (no collapsing or stripping)")
    train.add_argument("--extra-tokens", default="", help="comma-separated USER_DEFINED pieces")
    add_document_options(train)
    add_backend_options(train)

    tokenize = add_command(subparsers, "tokenize", cmd_tokenize,
                           "bulk-tokenize .txt/.jsonl/.parquet into Parquet, .npy, Megatron or HF datasets",
                           description="Writes OUT.stats.json beside the output OUT (documents, tokens, bytes, "
                                       "tokens per byte, longest document, seconds) unless --no-stats.")
    tokenize.add_argument("--model", required=True, help="a SentencePiece .model (BPE) or a gpu_text model file")
    tokenize.add_argument("inputs", nargs="+", help=INPUTS_HELP)
    tokenize.add_argument("output", help="OUT.parquet (list<int32> ids column), OUT.npy (OUT.ids.npy + "
                                         "OUT.offsets.npy), PREFIX.bin or PREFIX with --output-format megatron "
                                         "(PREFIX.bin + PREFIX.idx), DIR/ or DIR with --output-format hf")
    add_document_options(tokenize)
    tokenize.add_argument("--output-format", choices=FORMATS, default=None,
                          help="parquet, npy, megatron or hf (a datasets.load_from_disk directory); default: told "
                               "by the output's name (.npy, .bin/.idx, a trailing /, else parquet). --format is "
                               "the input's")
    tokenize.add_argument("--offsets", action="store_true", help="also write each token's byte span (parquet, hf)")
    tokenize.add_argument("--add-bos", action="store_true")
    tokenize.add_argument("--add-eos", action="store_true")
    tokenize.add_argument("--append-eod", action="store_true",
                          help="megatron: end every non-empty document with the model's eos id (preprocess_data.py's "
                               "--append-eod)")
    tokenize.add_argument("--pack", type=positive_int, default=None, metavar="N",
                          help="join the documents, each followed by the eos id, and cut them into rows of N tokens; "
                               "the remainder is the last, shorter row")
    tokenize.add_argument("--no-stats", action="store_true",
                          help="do not write the statistics JSON (OUT.stats.json; PREFIX.stats.json for megatron)")
    add_backend_options(tokenize)
