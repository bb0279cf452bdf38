"""Bulk tokenizing on Ray Data, end to end: read the Parquet shards of ``IN_DIR``, tokenize their
text column on a pool of actors (:func:`gpu_text.integrations.ray.tokenize_dataset`) and write
``OUT_DIR``: Parquet files (Ray's ``write_parquet``: every input column plus ``ids``
``list<int32>``) or Megatron-LM shards (one ``.bin``/``.idx`` per block,
:func:`gpu_text.integrations.ray.write_megatron`), with ``OUT_DIR/_manifest.json`` listing the
files and their document counts.

``python -m gpu_text.integrations.ray_example IN_DIR OUT_DIR --model M [--output-format
parquet|megatron]`` on this machine starts a local Ray instance; ``--address auto`` joins the
cluster this node belongs to (then ``IN_DIR``, ``OUT_DIR`` and the model must be paths every node
sees). As with ``gpu-text tokenize``, the documents written are counted against the rows read
(the Parquet footers), and ``OUT_DIR`` appears only whole: the job writes a temporary directory
beside it and renames it at the end. Rows keep the input order unless ``--any-order`` lets Ray
hand blocks on as they finish.

>>> import contextlib, io, tempfile
>>> from gpu_text.demo import MODEL
>>> with contextlib.redirect_stderr(io.StringIO()) as err:
...     main([tempfile.mkdtemp(), tempfile.mkdtemp(), "--model", str(MODEL)])
2
>>> err.getvalue().split(": error: ")[1].startswith("no Parquet files in")
True
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gpu_text.cli_helpers import CommandParser, debugging, load_file, non_negative_float, positive_int, report_error

PROG = "python -m gpu_text.integrations.ray_example"
FORMATS = ("parquet", "megatron")


def build_parser() -> CommandParser:
    """The example's options.

    >>> args = build_parser().parse_args(["in", "out", "--model", "m.txt", "--concurrency", "4", "--num-gpus", "1"])
    >>> args.output_format, args.concurrency, args.num_gpus, args.batch_size
    ('parquet', 4, 1.0, 4096)
    """
    parser = CommandParser(prog=PROG, description="Tokenize the Parquet shards of IN_DIR with Ray Data into OUT_DIR.")
    parser.add_argument("input_dir", metavar="IN_DIR", help="a directory of .parquet shards (searched recursively)")
    parser.add_argument("output_dir", metavar="OUT_DIR", help="the output directory (must not exist, or be empty)")
    parser.add_argument("--model", required=True, help="a SentencePiece .model (BPE) or a gpu_text model file")
    parser.add_argument("--output-format", choices=FORMATS, default="parquet")
    parser.add_argument("--column", default="text", help="the Parquet column holding the text (default 'text')")
    parser.add_argument("--output-column", default="ids", help="the ids column added (default 'ids')")
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default="auto",
                        help="each actor's backend (default auto: the actor's GPU when it has one)")
    parser.add_argument("--concurrency", type=positive_int, default=None,
                        help="actors tokenizing (default: Ray's autoscaling pool); on GPUs, the number of GPUs")
    parser.add_argument("--num-gpus", type=non_negative_float, default=None, help="GPUs per actor (1 on GPU nodes)")
    parser.add_argument("--actor-cpus", type=non_negative_float, default=None,
                        help="CPUs per actor (Ray's default: 1); a fixed pool must leave CPUs for the readers")
    parser.add_argument("--batch-size", type=positive_int, default=4096, help="documents per batch (default 4096)")
    parser.add_argument("--rows-per-shard", type=positive_int, default=None, metavar="N",
                        help="cut the input into blocks of at most N documents (Ray's streaming repartition), "
                             "each tokenized by one actor and written as one file or shard (default: Ray's blocks)")
    parser.add_argument("--add-bos", action="store_true")
    parser.add_argument("--add-eos", action="store_true")
    parser.add_argument("--append-eod", action="store_true",
                        help="Megatron: end every non-empty document with the eos id, as preprocess_data.py does")
    parser.add_argument("--any-order", action="store_true",
                        help="let Ray hand blocks on as they finish (faster; rows then leave in any order)")
    parser.add_argument("--address", default=None,
                        help="the Ray cluster to join ('auto': this node's); default: start a local instance")
    parser.add_argument("--num-cpus", type=positive_int, default=None, help="CPUs of a local Ray instance")
    parser.add_argument("--debug", action="store_true", help="on failure, show the Python traceback")
    return parser


def parquet_shards(input_dir: str | os.PathLike) -> list[Path]:
    """The ``.parquet`` files under ``input_dir`` (a file: itself), absolute, sorted by path:
    the files Ray's ``read_parquet`` reads from it, in the order it reads them with
    ``preserve_order`` (names starting with ``.`` or ``_``, and what is under them, are skipped).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "b").mkdir(); _ = (d / "b" / "2.parquet").write_bytes(b"")
    >>> for name in ("1.parquet", "notes.txt", "_SUCCESS.parquet", ".part.parquet"):
    ...     _ = (d / name).write_bytes(b"")
    >>> [str(p.relative_to(d)) for p in parquet_shards(d)]
    ['1.parquet', 'b/2.parquet']
    """
    root = Path(input_dir).absolute()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(2, "No such file or directory", str(input_dir))
    shards = sorted((path for path in root.rglob("*.parquet") if path.is_file()
                     and not any(part.startswith((".", "_")) for part in path.relative_to(root).parts)), key=str)
    if not shards:
        raise ValueError(f"no Parquet files in {input_dir}")
    return shards


def _check_output_dir(output_dir: Path, input_dir: Path) -> None:
    """Refuse an output directory that holds anything, or that lies in the input directory
    (its Parquet files would be read as inputs by the next run)."""
    out, inputs = output_dir.absolute().resolve(), input_dir.absolute().resolve()
    if out == inputs or inputs in out.parents:
        raise ValueError(f"{output_dir}: the output directory must not be inside the input directory {input_dir}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{output_dir}: the output directory exists and is not empty")


def _input_rows(shards: list[Path]) -> int:
    """The rows of every shard, from their footers (a damaged shard is an error naming it)."""
    import pyarrow.parquet as pq

    rows = 0
    for shard in shards:
        try:
            rows += pq.ParquetFile(shard).metadata.num_rows
        except Exception as exc:  # pyarrow's own errors: say which shard
            raise ValueError(f"{shard}: not a readable Parquet file ({exc})") from exc
    return rows


def _check_model(args: argparse.Namespace) -> Any:
    """The tokenizer, loaded here once so that a bad model or option fails before Ray starts."""
    from gpu_text.tokenizer.bulk import load_tokenizer

    if args.append_eod and args.output_format != "megatron":
        raise ValueError("--append-eod is Megatron's option; for Parquet use --add-eos")
    tokenizer = load_file(args.model, load_tokenizer, "tokenizer model")
    for flag, option, special in ((args.add_bos, "--add-bos", tokenizer.bos_id),
                                  (args.add_eos, "--add-eos", tokenizer.eos_id),
                                  (args.append_eod, "--append-eod", tokenizer.eos_id)):
        if flag and special < 0:
            raise ValueError(f"{args.model}: the model has no {option[-3:]} piece, so {option} cannot be honoured")
    if args.append_eod and args.add_eos:
        raise ValueError("--append-eod ends documents with the eos id already: drop --add-eos")
    return tokenizer


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The job :func:`main` runs (``args`` from :func:`build_parser`); returns its summary, which
    is also the manifest written as ``OUT_DIR/_manifest.json`` (plus the seconds taken)."""
    from gpu_text.integrations.ray import import_ray, tokenize_dataset, write_megatron

    shards = parquet_shards(args.input_dir)
    output_dir = Path(args.output_dir).absolute()
    _check_output_dir(output_dir, Path(args.input_dir))
    tokenizer = _check_model(args)
    expected = _input_rows(shards)
    if args.address is not None and args.num_cpus is not None:
        raise ValueError("--num-cpus sizes a local Ray instance; a cluster (--address) has its own CPUs")
    ray = import_ray()
    started = time.perf_counter()
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    # beside OUT_DIR, on the same (shared) storage: renamed into place when whole
    temp = Path(tempfile.mkdtemp(prefix=".gpu-text-", suffix=f".{output_dir.name}", dir=output_dir.parent))
    own_instance = not ray.is_initialized()
    options, order = None, False
    try:
        if own_instance:
            ray.init(address=args.address, num_cpus=args.num_cpus)
        options = ray.data.DataContext.get_current().execution_options
        order, options.preserve_order = options.preserve_order, not args.any_order
        # one path, not the list of shards: Ray 2.60 resolves each path it is given on its own
        # thread, and those threads race to import fsspec's HTTP filesystem (an ImportError
        # when aiohttp is not installed)
        ds = ray.data.read_parquet(str(Path(args.input_dir).absolute()))
        if args.output_format == "megatron":
            ds = ds.select_columns([args.column])  # Megatron keeps the ids only: read nothing else
        if args.rows_per_shard:  # blocks of N documents: each goes to one actor, and out as one file
            ds = ds.repartition(target_num_rows_per_block=args.rows_per_shard)
        ds = tokenize_dataset(ds, os.path.abspath(args.model), column=args.column, output_column=args.output_column,
                              backend=args.backend, concurrency=args.concurrency, num_gpus=args.num_gpus,
                              batch_size=args.batch_size, add_bos=args.add_bos, add_eos=args.add_eos,
                              **({"num_cpus": args.actor_cpus} if args.actor_cpus is not None else {}))
        if args.output_format == "megatron":
            manifest = write_megatron(ds, temp, vocab_size=len(tokenizer), column=args.output_column,
                                      eod_id=tokenizer.eos_id if args.append_eod else None)
        else:
            ds.write_parquet(str(temp))
            manifest = _parquet_manifest(temp)
        if manifest["documents"] != expected:
            raise RuntimeError(f"read {expected} documents but wrote {manifest['documents']}")
        if output_dir.exists():
            output_dir.rmdir()  # empty (checked above): the finished directory takes its place
        os.replace(temp, output_dir)
    finally:
        if options is not None:
            options.preserve_order = order
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
        if own_instance:
            ray.shutdown()
    return {**manifest, "input_shards": len(shards), "output": str(output_dir),
            "seconds": round(time.perf_counter() - started, 3)}


def _parquet_manifest(directory: Path) -> dict[str, Any]:
    """List the Parquet files Ray wrote, with their rows (from the footers), in ``_manifest.json``."""
    import pyarrow.parquet as pq

    from gpu_text.integrations.ray import MANIFEST, write_manifest

    files = [{"file": path.name, "documents": pq.ParquetFile(path).metadata.num_rows}
             for path in sorted(directory.glob("*.parquet"))]
    manifest = {"format": "parquet", "documents": sum(f["documents"] for f in files), "files": files}
    write_manifest(directory / MANIFEST, manifest)
    return manifest


def main(argv: list[str] | None = None) -> int:
    """Run the example; its summary goes to stderr as JSON; any failure is one line and exit code 2
    (``--debug``: the traceback). See the module example."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # --help, or a usage error the parser has reported
        return exit.code if isinstance(exit.code, int) else 0
    try:
        summary = run(args)
    except Exception as exc:
        if debugging(args):
            raise
        return report_error(PROG, exc)
    summary = {key: value for key, value in summary.items() if key not in ("shards", "files")}
    print(json.dumps(summary), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
