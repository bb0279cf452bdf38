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
    if args.method == "bytepiece":
        return _train_bytepiece(args)
    if args.method == "unigram":
        return _train_unigram(args)
    from gpu_text.tokenizer.bpe_trainer import BPETrainer

    cn_dictionary = args.cn if args.cn and os.path.exists(args.cn) else None
    check_outputs([*args.inputs, cn_dictionary], [args.output])  # before the (long) training
    check_backend(args)
    extra = [token for token in args.extra_tokens.split(",") if token]
    trainer = BPETrainer(vocab_size=args.vocab_size, character_coverage=args.character_coverage,
                         max_piece_size=args.max_piece_size or 18, min_count=args.min_count or 1, split=args.split,
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


def _train_unigram(args: argparse.Namespace) -> int:
    """``train-tokenizer --method unigram``: SentencePiece's Unigram trainer (:class:`UnigramTrainer
    <gpu_text.tokenizer.unigram_trainer.UnigramTrainer>`), the tokenizer written by ``Tokenizer.save``
    (``gpu-text tokenize --model`` reads it). ``--max-piece-size`` counts characters here (default
    16, SentencePiece's); byte fallback is on; ``--min-count`` (BPE and BytePiece only) is refused.

    >>> import tempfile, pathlib
    >>> from gpu_text.cli import main
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "c.txt").write_text("ab ab abc\\n" * 3)
    >>> main(["train-tokenizer", "--method", "unigram", str(d / "c.txt"), "-o", str(d / "m.json"),
    ...       "--vocab-size", "266", "--character-coverage", "1"])
    0
    """
    from gpu_text.tokenizer.unigram_trainer import UnigramTrainer

    if args.min_count is not None:
        raise ValueError("--method unigram does not take --min-count (a BPE and BytePiece option)")
    cn_dictionary = args.cn if args.cn and os.path.exists(args.cn) else None
    check_outputs([*args.inputs, cn_dictionary], [args.output])  # before the (long) training
    check_backend(args)
    trainer = UnigramTrainer(vocab_size=args.vocab_size, character_coverage=args.character_coverage,
                             max_piece_length=args.max_piece_size or 16, split=args.split, digits=args.digits,
                             cn=args.cn, normalizer=args.normalizer, reconstruct=args.reconstruct,
                             extra_tokens=[token for token in args.extra_tokens.split(",") if token],
                             progress=progress_enabled(), chunk_bytes=chunk_bytes(args), backend=args.backend)
    with document_options(**reader_options(args)):
        trainer.fit(args.inputs, field=args.field)
    with atomic_outputs([args.output]) as (temp,):
        trainer.tokenizer_.save(temp)
    stats = trainer.stats_
    print(f"wrote {len(trainer.model_)} pieces (unigram, {stats['required_chars']} required characters) to "
          f"{args.output}; {stats['pre_tokens']} distinct pre-tokens, {stats['seed_pieces']} seed pieces, "
          f"{len(stats['em_rounds'])} EM rounds; counting {stats['count_seconds']:.1f} s, seeding "
          f"{stats['seed_seconds']:.1f} s, EM {stats['em_seconds']:.1f} s", file=sys.stderr)
    return 0


def _train_bytepiece(args: argparse.Namespace) -> int:
    """``train-tokenizer --method bytepiece``: PieceTokenizer's BytePiece counter (n-gram counts, the
    byte Viterbi's keep/re-split loop), the model in the seed's text format with ``method=bytepiece``.
    Its options are the seed's: ``--min-count`` (default 32 here, as the seed's), ``--max-piece-size``,
    ``--normalizer``, ``--split word`` (cut 0) or ``isolate`` (cut 1), ``--digits``; the BPE-only ones
    (``--character-coverage``, ``--cn``, ``--reconstruct``, ``--extra-tokens``) are refused."""
    from collections.abc import Iterator

    from gpu_text.documents import input_format, iter_documents
    from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

    bpe_only = [flag for flag, used in (("--cn", args.cn), ("--reconstruct", args.reconstruct),
                                        ("--extra-tokens", args.extra_tokens),
                                        ("--character-coverage", args.character_coverage != 0.9995),
                                        ("--split whitespace", args.split == "whitespace")) if used]
    if bpe_only:
        raise ValueError(f"--method bytepiece does not take {', '.join(bpe_only)} (BPE options)")
    check_outputs(list(args.inputs), [args.output])
    trainer = BytePieceTrainer(vocab_size=args.vocab_size, min_count=args.min_count or 32,
                               max_piece_size=args.max_piece_size or 18, normalizer=args.normalizer,
                               cut=0 if args.split == "word" else 1, split_digits=args.digits == "split",
                               chunk_bytes=chunk_bytes(args), progress=progress_enabled(), backend=args.backend)
    check_backend(args)
    plain = getattr(args, "format", "auto") in ("auto", "txt") and all(
        path != "-" and os.path.isfile(path) and input_format(path) == "txt" for path in args.inputs)
    if plain:  # read twice, line by line as the seed reads them
        tokenizer = trainer.train_files(args.inputs)
    else:
        def lines() -> Iterator[bytes]:
            with document_options(**reader_options(args)):
                for documents in iter_documents(args.inputs, args.field, chunk_bytes(args)):
                    yield from documents.batch.to_bytes_list()

        tokenizer = trainer.train(list(lines()) if "-" in args.inputs else lines)
    with atomic_outputs([args.output]) as (temp,):
        tokenizer.save_model_file(temp)
    print(f"wrote {len(tokenizer.model)} pieces (bytepiece) to {args.output}", file=sys.stderr)
    return 0


def cmd_tokenize(args: argparse.Namespace) -> int:
    """``gpu-text tokenize --model M IN... OUT`` (one output), or ``IN... --output-dir DIR`` (a
    sharded job, :mod:`gpu_text.jobs`): a JSON summary (counts, throughput) on stderr. Exit code
    0 when every document is written (a sharded job with ``--on-error skip`` too: then with a
    warning naming the skipped shards), 2 on any error (one line naming the file or shard).

    >>> import tempfile, pathlib
    >>> from gpu_text.cli import main
    >>> from gpu_text.demo import MODEL
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "docs.txt").write_text("hello world\\n\\nbye\\n")
    >>> main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(d / "docs.txt"), str(d / "ids.parquet")])
    0
    >>> main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(d / "docs.txt"), "--output-dir",
    ...       str(d / "shards")])
    0
    """
    from gpu_text.jobs.shards import expand_inputs
    from gpu_text.outputs import check_options, output_format
    from gpu_text.tokenizer.bulk import check_specials, load_tokenizer, output_paths, tokenize_files

    sharded = args.output_dir is not None
    _check_job_options(args, sharded)
    inputs, output = (args.paths, None) if sharded else (args.paths[:-1], args.paths[-1])
    fmt = (args.output_format or "parquet") if sharded else output_format(output, args.output_format)
    check_options(fmt, args.offsets, args.append_eod, args.pack)  # before the model is loaded
    inputs = expand_inputs(inputs)
    if not sharded:
        check_outputs([args.model, *inputs], output_paths(output, fmt, stats=not args.no_stats))
    check_backend(args)
    if sharded:
        return _run_job(args, inputs, fmt)
    tokenizer = load_file(args.model, load_tokenizer, "tokenizer model")
    check_specials(tokenizer, args.model, args.add_bos, args.add_eos, args.append_eod, args.pack)
    summary = tokenize_files(tokenizer, inputs, output, field=args.field, with_offsets=args.offsets,
                             backend=args.backend, chunk_bytes=chunk_bytes(args), add_bos=args.add_bos,
                             add_eos=args.add_eos, progress=progress_enabled(), output_format=fmt,
                             append_eod=args.append_eod, pack=args.pack, stats=not args.no_stats,
                             **reader_options(args))
    print(json.dumps(summary), file=sys.stderr)
    return 0


JOB_OPTIONS = ("resume", "workers", "devices", "shard_bytes", "on_error")


def _check_job_options(args: argparse.Namespace, sharded: bool) -> None:
    """The options of sharded jobs need --output-dir; one output needs IN... OUT."""
    given = [name for name in JOB_OPTIONS if getattr(args, name) not in (None, False)]
    if not sharded:
        if given:
            raise ValueError(f"--{given[0].replace('_', '-')} is an option of sharded jobs: give --output-dir DIR")
        if len(args.paths) < 2:
            raise ValueError("give the inputs and then the output (IN... OUT), or the inputs and --output-dir DIR")
        return
    if args.no_stats:
        raise ValueError("--no-stats: a sharded job keeps its statistics in DIR/manifest.json")
    if args.workers is not None and args.devices is not None:
        raise ValueError("--devices runs one worker per GPU: give --workers or --devices, not both")
    if args.devices is not None and args.backend == "cpu":
        raise ValueError("--devices names GPUs, but --backend is cpu: use --workers N for CPU processes")


def _run_job(args: argparse.Namespace, inputs: list[str], fmt: str) -> int:
    """The sharded job. The model is loaded (and checked against the options) once, by whichever
    process tokenizes: this one, or each worker, before the job makes any output."""
    from gpu_text.jobs import ShardSettings, run_sharded_job

    settings = ShardSettings(field=args.field, input_format=args.format, max_document_bytes=args.max_document_mb << 20,
                             chunk_bytes=chunk_bytes(args), backend=args.backend, output_format=fmt,
                             with_offsets=args.offsets, add_bos=args.add_bos, add_eos=args.add_eos,
                             append_eod=args.append_eod, pack=args.pack, shard_bytes=args.shard_bytes)
    summary = run_sharded_job(args.model, inputs, args.output_dir, settings, resume=args.resume,
                              workers=args.workers or 1, devices=args.devices, on_error=args.on_error or "stop",
                              progress=progress_enabled())
    print(json.dumps(summary), file=sys.stderr)
    if summary["skipped"]:
        names = ", ".join(f"{s['shard']} ({s['error']})" for s in summary["skipped"][:3])
        more = f" and {len(summary['skipped']) - 3} more" if len(summary["skipped"]) > 3 else ""
        print(f"{args.command_name}: warning: skipped {len(summary['skipped'])} shard(s) whose input could not be "
              f"read: {names}{more}; they are recorded in {summary['manifest']} (--resume tries them again)",
              file=sys.stderr)
    return 0


def byte_size(text: str) -> int:
    """An argparse ``type``: a size in bytes, with an optional K, M or G (powers of 1024).

    >>> byte_size("64M"), byte_size("1000")
    (67108864, 1000)
    """
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    number, scale = (text[:-1], units[text[-1].lower()]) if text[-1:].lower() in units else (text, 1)
    try:
        value = int(number) * scale
    except ValueError:
        value = 0
    if value < 1 or value > 1 << 50:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size in bytes (a positive integer, maybe with K, M or G)")
    return value


def device_list(text: str) -> list[str]:
    """An argparse ``type``: GPU numbers, comma-separated, each once.

    >>> device_list("0,1")
    ['0', '1']
    """
    devices = [part.strip() for part in text.split(",")]
    if not devices or not all(d.isdigit() for d in devices) or len(set(devices)) != len(devices):
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of GPU numbers, each once (like 0,1,2)")
    return devices


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
    train.add_argument("--method", choices=["bpe", "bytepiece", "unigram"], default="bpe",
                       help="bpe (SentencePiece's BPE trainer), bytepiece (PieceTokenizer's default counter; "
                            "--min-count defaults to the seed's 32 there) or unigram (SentencePiece's Unigram "
                            "trainer; the output is a gpu_text tokenizer file)")
    train.add_argument("--output", "-o", required=True, help="the model file to write (the seed's text format)")
    train.add_argument("--vocab-size", type=positive_int, default=8000,
                       help="pieces in the model, the 259 special and byte pieces included (default 8000)")
    train.add_argument("--character-coverage", type=fraction, default=0.9995,
                       help="share of characters (by frequency) kept as pieces; the rest never merge")
    train.add_argument("--max-piece-size", type=positive_int, default=None,
                       help="longest piece: in bytes for bpe and bytepiece (default 18), in characters for unigram "
                            "(default 16)")
    train.add_argument("--min-count", type=positive_int, default=None,
                       help="bpe: stop when the best pair is seen fewer times (default 1); bytepiece: the n-gram "
                            "count a piece longer than a byte needs (default 32)")
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
                           usage="%(prog)s --model M [options] IN... OUT\n"
                                 "       %(prog)s --model M [options] IN... --output-dir DIR [--resume] [--workers N]",
                           description="Writes OUT.stats.json beside the output OUT (documents, tokens, bytes, "
                                       "tokens per byte, longest document, seconds) unless --no-stats. With "
                                       "--output-dir, a sharded job: see 'sharded jobs' below.")
    tokenize.add_argument("--model", required=True, help="a SentencePiece .model (BPE) or a gpu_text model file")
    tokenize.add_argument("paths", nargs="+", metavar="PATH",
                          help=f"inputs: {INPUTS_HELP}; also globs and directories (their document files, sorted). "
                               "Then the output: OUT.parquet (list<int32> ids column), OUT.npy (OUT.ids.npy + "
                               "OUT.offsets.npy), PREFIX.bin or PREFIX with --output-format megatron (PREFIX.bin + "
                               "PREFIX.idx), DIR/ or DIR with --output-format hf; with --output-dir, no OUT")
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
    job = tokenize.add_argument_group(
        "sharded jobs", "With --output-dir every input is a shard: DIR gets one output per input, named after it "
                        "(its path below the inputs' common folder, the suffixes replaced), and DIR/manifest.json "
                        "(each shard's documents, tokens, files and SHA-256, the options). Exit code 0 when every "
                        "shard is written or skipped (--on-error skip, with a warning), 2 on any error.")
    job.add_argument("--output-dir", default=None, metavar="DIR",
                     help="write a shard per input into DIR (made if missing); the output format defaults to parquet")
    job.add_argument("--shard-bytes", type=byte_size, default=None, metavar="N",
                     help="cut each shard's output into pieces NAME-00000, NAME-00001, ... of about N bytes of input "
                          "text (a piece ends with the document reaching N); K, M, G suffixes")
    job.add_argument("--resume", action="store_true",
                     help="continue the job in DIR: keep the shards whose files match the manifest, redo the rest")
    job.add_argument("--workers", type=positive_int, default=None, metavar="N",
                     help="N worker processes taking shards as they free up (default 1: this process); each gets "
                          "cores/N Numba threads unless NUMBA_NUM_THREADS is set")
    job.add_argument("--devices", type=device_list, default=None, metavar="0,1,...",
                     help="one worker process per GPU (CUDA_VISIBLE_DEVICES set for each), shards as with --workers")
    job.add_argument("--on-error", choices=["stop", "skip"], default=None,
                     help="an input shard that cannot be read: stop the job (default, exit code 2) or skip it, "
                          "record it in the manifest and warn (exit code 0)")
