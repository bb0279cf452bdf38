"""``gpu-text train-tokenizer``: train a BPE vocabulary (SentencePiece's method) and write the seed's model file."""
from __future__ import annotations

import argparse
import sys


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Registers ``train-tokenizer``.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["train-tokenizer", "a.txt", "--output", "m.model"])
    >>> args.vocab_size, args.split, args.normalizer
    (8000, 'word', 'no')
    """
    train = subparsers.add_parser(
        "train-tokenizer", help="train a BPE vocabulary (SentencePiece's BPE trainer) into a model file",
        description="Streams the inputs, counts pre-tokens and learns BPE merges. The vocabulary gets "
                    "--vocab-size pieces plus 3 specials and 256 byte pieces.")
    train.add_argument("inputs", nargs="+", help=".txt (one document per line), .jsonl (see --field), "
                                                 ".parquet (see --column; needs pyarrow)")
    train.add_argument("--output", "-o", required=True, help="the model file to write (the seed's text format)")
    train.add_argument("--vocab-size", type=int, default=8000,
                       help="pieces besides the 3 specials and 256 byte pieces (default 8000)")
    train.add_argument("--character-coverage", type=float, default=0.9995,
                       help="share of characters (by frequency) kept as pieces; the rest never merge")
    train.add_argument("--max-piece-size", type=int, default=18, help="longest piece, in bytes")
    train.add_argument("--min-count", type=int, default=1, help="stop when the best pair is seen fewer times")
    train.add_argument("--split", choices=["word", "isolate", "whitespace"], default="word", help="pre-tokenizer split")
    train.add_argument("--digits", choices=["keep", "split"], default="keep", help="digit runs whole or one per digit")
    train.add_argument("--cn", default=None,
                       help="Han runs: unset keeps them whole, 'char' cuts per character, a dictionary path cuts words")
    train.add_argument("--normalizer", default="no", help="no, NFKC, NMT_NFKC, NFKC_CF or NMT_NFKC_CF")
    train.add_argument("--reconstruct", action="store_true", help="keep every space (no collapsing or stripping)")
    train.add_argument("--extra-tokens", default="", help="comma-separated USER_DEFINED pieces")
    train.add_argument("--field", default="text", help="the text field of .jsonl records")
    train.add_argument("--column", default="text", help="the text column of .parquet files")
    from gpu_text.cli import add_backend_options

    add_backend_options(train)
    train.set_defaults(run=cmd_train_tokenizer)


def cmd_train_tokenizer(args: argparse.Namespace) -> int:
    """Trains on ``args.inputs`` and writes ``args.output``; prints a summary to stderr.

    >>> import tempfile, pathlib
    >>> from gpu_text.cli import main
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "c.txt").write_text("ab ab\\n")
    >>> main(["train-tokenizer", str(d / "c.txt"), "-o", str(d / "m.model"), "--vocab-size", "4",
    ...       "--character-coverage", "1"])
    0
    """
    from gpu_text.tokenizer.bpe_trainer import BPETrainer

    extra = [token for token in args.extra_tokens.split(",") if token]
    trainer = BPETrainer(vocab_size=args.vocab_size + 259, character_coverage=args.character_coverage,
                         max_piece_size=args.max_piece_size, min_count=args.min_count, split=args.split,
                         digits=args.digits, cn=args.cn, normalizer=args.normalizer, reconstruct=args.reconstruct,
                         extra_tokens=extra, progress=sys.stderr.isatty(), chunk_bytes=args.chunk_mb << 20,
                         backend=args.backend)
    model = trainer.train(args.inputs, field=args.field, column=args.column)
    model.save(args.output)
    stats = model.stats
    print(f"wrote {len(model)} pieces ({model.n_merges} merges, {len(model.required_chars)} characters) to "
          f"{args.output}; {stats['pre_tokens']} distinct pre-tokens, counting {stats['count_seconds']:.1f} s, "
          f"merging {stats['merge_seconds']:.1f} s", file=sys.stderr)
    return 0
