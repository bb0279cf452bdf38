"""The ``gpu-text`` command line: ``info``, ``segment``, ``score``; later issues add more here.

Each subcommand is a function ``cmd_<name>(args) -> int`` registered in :func:`build_parser`.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from typing import Any

import numpy as np


def environment_info() -> dict[str, Any]:
    """Version, chosen backend, device, and whether CuPy, NVRTC and Numba threading are usable.

    >>> info = environment_info()
    >>> info["backend"] in ("cpu", "cuda"), "numba_threading_layer" in info
    (True, True)
    """
    import numba

    import gpu_text
    from gpu_text.backend import cuda_unavailable_reason, get_backend

    info: dict[str, Any] = {
        "gpu_text": gpu_text.__version__,
        "python": platform.python_version(),
        "numba": numba.__version__,
        "backend": get_backend().name,
        "cuda_unavailable_reason": cuda_unavailable_reason(),
        "device": None,
    }
    try:
        import cupy

        info["cupy"] = cupy.__version__
    except Exception as exc:  # not installed, or a broken CUDA install
        info["cupy"] = f"not importable ({type(exc).__name__})"
    if info["cuda_unavailable_reason"] is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        free, total = cupy.cuda.runtime.memGetInfo()
        info["device"] = {"name": props["name"].decode(), "compute_capability": f"{props['major']}.{props['minor']}",
                          "memory_total_gib": round(total / 2**30, 1), "memory_free_gib": round(free / 2**30, 1)}
    try:
        from cuda.bindings import nvrtc

        _, major, minor = nvrtc.nvrtcVersion()
        info["nvrtc"] = f"{major}.{minor}"
    except Exception as exc:
        info["nvrtc"] = f"not importable ({type(exc).__name__})"
    info["numba_threads"] = numba.get_num_threads()
    info["numba_threading_layer"] = _numba_threading_layer()
    return info


def _numba_threading_layer() -> str:
    import numba
    import numpy as np

    @numba.njit(parallel=True)
    def _touch(x):  # the layer is chosen on the first parallel launch
        for i in numba.prange(x.size):
            x[i] += 1

    _touch(np.zeros(2))
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "unknown"


def cmd_info(args: argparse.Namespace) -> int:
    info = environment_info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"{key:>24}: {value}")
    return 0


def _open_input(path: str):
    return sys.stdin.buffer if path == "-" else open(path, "rb")


def _open_output(path: str):
    return sys.stdout.buffer if path == "-" else open(path, "wb")


def _progress(total: int, description: str):
    from tqdm import tqdm

    return tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024, desc=description,
                disable=not sys.stderr.isatty() and os.environ.get("GPU_TEXT_PROGRESS") != "1")


def cmd_segment(args: argparse.Namespace) -> int:
    """Stream IN line by line into OUT, each line's words joined by one space."""
    from gpu_text.segment import Segmenter, load_dictionary
    from gpu_text.textio import file_size, iter_line_batches, join_spans

    dictionary = load_dictionary(args.dict, on_error=args.on_error) if args.dict else None
    if dictionary is not None and dictionary.skipped:
        print(f"skipped {len(dictionary.skipped)} malformed dictionary lines (first: {dictionary.skipped[0]})",
              file=sys.stderr)
    segmenter = Segmenter(dictionary, compat=args.compat)
    lines_in = lines_out = 0
    with _open_input(args.input) as source, _open_output(args.output) as sink, \
            _progress(file_size(args.input), "segment") as bar:
        for batch in iter_line_batches(source, args.chunk_mb << 20, bar):
            result = segmenter.segment(batch, backend=args.backend)
            starts, ends = result.starts.to_numpy(), result.ends.to_numpy()
            base = np.repeat(batch.offsets[:-1], np.diff(starts.offsets))
            text = join_spans(batch.data, starts.offsets, starts.values + base, ends.values + base)
            sink.write(text)
            lines_in += len(batch)
            lines_out += text.count(b"\n")
    if lines_in != lines_out:
        print(f"error: read {lines_in} lines but wrote {lines_out}", file=sys.stderr)
        return 1
    print(f"segmented {lines_in} lines", file=sys.stderr)
    return 0


def cmd_train_dict(args: argparse.Namespace) -> int:
    """Learn word frequencies for the candidate words from the corpus (DictCut's Hard EM)."""
    from gpu_text.segment.training import DictionaryTrainer

    with open(args.candidates, encoding="utf-8", errors="replace") as lines:
        candidates = [line.split()[0] for line in lines if line.strip()]
    trainer = DictionaryTrainer(target_size=args.target, min_count=args.min_count, sub_iterations=args.sub_iterations,
                                chunk_bytes=args.chunk_mb << 20, backend=args.backend)
    dictionary = trainer.train(candidates, args.corpus)
    dictionary.save(args.output)
    for step in trainer.history_:
        print(f"{step.step:>12}: {step.dictionary_size} words, {step.tokens} tokens", file=sys.stderr)
    print(f"wrote {len(dictionary)} words to {args.output}", file=sys.stderr)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    """Precision, recall, F1 (and IV/OOV recall with --words) of PRED against GOLD."""
    from gpu_text.metrics import read_segmented, score_words

    vocabulary = None
    if args.words:
        vocabulary = {w for line in read_segmented(args.words) for w in line}
    score = score_words(read_segmented(args.gold), read_segmented(args.pred), vocabulary)
    print(json.dumps(score.as_dict(), indent=2))
    return 0


# Modules that add subcommands: each has add_commands(subparsers), called in this order.
COMMAND_MODULES: list[str] = ["gpu_text.tokenizer.bulk", "gpu_text.crf.commands", "gpu_text.tokenizer.commands"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand.

    >>> build_parser().parse_args(["info", "--json"]).json
    True
    """
    parser = argparse.ArgumentParser(prog="gpu-text", description="GPU-accelerated text processing.")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")
    info = commands.add_parser("info", help="version, backend, device and toolchain")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    info.set_defaults(run=cmd_info)

    segment = commands.add_parser("segment", help="dictionary word segmentation (DictCut), one line in, one line out")
    segment.add_argument("input", help="UTF-8 text, one line per sentence or document ('-' for stdin)")
    segment.add_argument("output", help="words joined by spaces, one line per input line ('-' for stdout)")
    segment.add_argument("--dict", help="dictionary: 'word<TAB>freq' or jieba's 'word freq [tag]' lines")
    segment.add_argument("--compat", choices=["dictcut", "jieba"], default=None,
                         help="lattice and tie rule: DictCut's (default) or jieba's HMM=False cut")
    segment.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                         help="malformed dictionary lines: stop with an error naming the line, or skip them")
    add_backend_options(segment)
    segment.set_defaults(run=cmd_segment)

    train = commands.add_parser("train-dict", help="learn word frequencies from raw text (DictCut's Hard EM)")
    train.add_argument("corpus", nargs="+", help="raw UTF-8 text files, one line per sentence or document")
    train.add_argument("output", help="the dictionary to write, 'word<TAB>freq' lines")
    train.add_argument("--candidates", required=True, help="candidate words, one per line (first column)")
    train.add_argument("--target", type=int, default=180_000, help="dictionary size to prune down to")
    train.add_argument("--min-count", type=int, default=15, help="multi-character words seen fewer times are dropped")
    train.add_argument("--sub-iterations", type=int, default=2, help="Hard EM rounds before each pruning and at the end")
    add_backend_options(train)
    train.set_defaults(run=cmd_train_dict)

    score = commands.add_parser("score", help="word precision/recall/F1 of a segmentation (SIGHAN convention)")
    score.add_argument("gold", help="gold segmentation, words separated by whitespace")
    score.add_argument("pred", help="predicted segmentation of the same lines")
    score.add_argument("--words", help="training data (segmented) whose words count as in-vocabulary")
    score.set_defaults(run=cmd_score)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_commands(commands)
    return parser


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--chunk-mb``, shared by every batch command."""
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                        help="default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable")
    parser.add_argument("--chunk-mb", type=int, default=16, help="input read per batch (bounds memory)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gpu-text`` console script.

    >>> main(["--version"])  # doctest: +ELLIPSIS
    gpu_text ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        import gpu_text

        print(f"gpu_text {gpu_text.__version__}")
        return 0
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except (ValueError, OSError) as exc:  # bad input files: a message, not a traceback
        print(f"gpu-text {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
