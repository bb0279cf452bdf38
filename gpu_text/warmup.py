"""Compiling the CPU kernels ahead of time (``gpu-text warmup``), and the one line a command prints
when it has to compile them on first use.

The Numba twins are compiled on their first call and kept on disk (``cache=True``), so only a
first run pays for compiling; this module is how a user sees that and how an image or a CI job
pays it once, ahead of time. :func:`warmup` runs every chosen command through
:func:`gpu_text.cli.main` on tiny generated inputs (in a temporary folder, output discarded), so
it compiles exactly what the commands compile, for the same argument types, and nothing else.

A first run on an empty cache compiles on two cores where it can: for the commands that compile
longest (``tokenize``, ``train-tokenizer``, ``train-dict``, ``segment``, ``crf train``,
``word2vec train``, ``lda train``), :func:`compile_notice` starts a second process that compiles
some of the command's kernels while this one compiles the others (:func:`ahead_plans`,
``cpu_fallback/compile_ahead.py``; ``$GPU_TEXT_COMPILE_AHEAD=0`` turns it off). ``python -m
benchmarks cold_start`` measures every command's first and second run.

Where the compiled code goes (Numba's own choice, in this order):

1. ``$NUMBA_CACHE_DIR`` when it is set;
2. ``__pycache__`` beside the kernels' source, when that folder is writable (a source checkout or
   a virtual environment the user owns);
3. else the user's cache folder, ``$XDG_CACHE_HOME/numba`` (``~/.cache/numba`` on Linux): this is
   what a read-only install (a system site-packages, a wheel installed by root) gets, and it
   persists between runs like the others.

For a container image, set ``NUMBA_CACHE_DIR`` to a fixed folder (``ENV NUMBA_CACHE_DIR=/opt/numba``)
and run ``gpu-text warmup`` while building it: the running container then loads every kernel from
there whatever user it runs as. The cache is keyed by the kernels' source (path and content), the
CPU and the Numba version, so a changed install compiles again rather than loading stale code.

>>> sorted(WARMUPS)[:3]
['crf', 'info', 'lda']
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

NOTICE_VAR = "GPU_TEXT_COMPILE_NOTICE"
AHEAD_VAR = "GPU_TEXT_COMPILE_AHEAD"  # "0": no compile-ahead child (cpu_fallback/compile_ahead.py)
NOTICE = ("gpu_text: compiling CPU kernels (first run only: they are cached for later runs; "
          "'gpu-text warmup' compiles them ahead of time)...")
# Commands that compile nothing: no listener (importing Numba alone costs ~0.4 s).
NO_KERNELS = frozenset({"warmup"})

_DATA = Path(__file__).resolve().parent / "data"
_MODEL = _DATA / "models" / "sample-bpe-4k.txt"
_ENGLISH = _DATA / "samples" / "en-kjv.txt"
_DICTIONARY = "南京\t5\n南京市\t3\n市长\t2\n长江\t4\n大桥\t6\n江\t1\n在\t3\n人\t2\n"
_RAW = "他是英国人Tom，编号123 don't\n南京市长江大桥\n\n\xa0大桥在南京\n"
_SEGMENTED = "南京  市  长江  大桥\n大桥  在  南京\n长江  南京  市长\n" * 3
_CONLL = "He PRP B-NP\nran VBD B-VP\n\nShe PRP B-NP\nsat VBD B-VP\n"


class CompileNotice:
    """A Numba ``numba:compile`` listener that writes :data:`NOTICE` once, on the first real
    compile (Numba raises the event only when no cached code was found), from whatever thread
    compiles. Use it with :func:`compile_notice`.

    >>> notice = CompileNotice(io.StringIO())
    >>> notice.on_start(None); notice.on_start(None); notice.on_end(None)
    >>> notice.stream.getvalue().count("compiling"), notice.compiles
    (1, 2)
    """

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet
        self.compiles = 0
        self._lock = threading.Lock()

    def on_start(self, event: Any) -> None:
        with self._lock:  # compiles may start on several threads at once
            self.compiles += 1
            first = self.compiles == 1
        if first and not self.quiet:
            print(NOTICE, file=self.stream, flush=True)

    def on_end(self, event: Any) -> None:
        pass


@contextlib.contextmanager
def compile_notice(command: str | None, stream: TextIO | None = None,
                   args: Any = None) -> Iterator[CompileNotice | None]:
    """While the block runs, say once on ``stream`` (stderr) that kernels are being compiled, if
    any are; nothing for the commands of :data:`NO_KERNELS` or with ``$GPU_TEXT_COMPILE_NOTICE=0``.
    With the command's parsed ``args``, its later kernels are compiled in a second process when
    they are not cached yet (:func:`ahead_plans`); that process is ended when the block ends.

    >>> with compile_notice("warmup") as notice:
    ...     print(notice)
    None
    """
    quiet = command in NO_KERNELS or os.environ.get(NOTICE_VAR, "1").strip() == "0"
    with contextlib.ExitStack() as stack:
        notice = None if quiet else stack.enter_context(_listening(CompileNotice(stream or sys.stderr)))
        plans = ahead_plans(args) if args is not None and command not in NO_KERNELS else ()
        if plans:
            from gpu_text.backend import get_backend

            compile_ahead = get_backend("cpu").ops("compile_ahead")
            stack.callback(compile_ahead.stop)
            # the notice also when this process first waits for the child (it may compile nothing itself)
            compile_ahead.start(*plans, on_wait=None if notice is None else functools.partial(notice.on_start, None))
        yield notice


def ahead_plans(args: Any) -> tuple[str, ...]:
    """The compile-ahead plans (``cpu_fallback.compile_ahead.PLANS``) for a command's parsed
    arguments: only on the CPU backend, where this process loads the kernels (not ``--devices``
    jobs, nor ``--workers`` jobs whose workers are spawned: each of those loads its own), for the
    commands whose first run compiles for more than ~8 s on two cores.

    >>> import argparse
    >>> ahead_plans(argparse.Namespace(command="train-tokenizer", method="bytepiece", backend="cpu"))
    ('train-bytepiece',)
    >>> ahead_plans(argparse.Namespace(command="lda", lda_command="train", backend="cpu"))
    ('lda-train',)
    >>> ahead_plans(argparse.Namespace(command="score"))
    ()
    >>> ahead_plans(argparse.Namespace(command="crf", crf_command="train", algorithm="sgd-l1", backend="cpu"))
    ()
    """
    command = getattr(args, "command", None)
    plans = []
    if command == "tokenize":
        if getattr(args, "devices", None) is not None:
            return ()
        if getattr(args, "workers", None) not in (None, 1) and not _forks_workers(args):
            return ()
        from gpu_text.tokenizer.tokenizer_file import model_method

        plans.append(f"tokenize-{model_method(args.model) if getattr(args, 'model', None) else None}")
        if _output_format(args) == "parquet":
            plans.append("parquet")
    elif command == "train-tokenizer":
        plans.append(f"train-{getattr(args, 'method', 'bpe')}")
    elif command == "train-dict":
        plans.append("train-dict")
    elif command == "segment" and getattr(args, "compat", None) is None:  # jieba's lattice: other kernels
        plans.append("segment")
    elif command in ("crf", "word2vec", "lda") and getattr(args, f"{command}_command", None) == "train":
        # CRF's stochastic gradient descent has no quasi-Newton steps for this process to compile
        if not (command == "crf" and getattr(args, "algorithm", None) == "sgd-l1"):
            plans.append(f"{command}-train")
    if not plans:  # a command without kernels, or a variant without a plan (crf train --algorithm sgd-l1)
        return ()
    from gpu_text.backend import get_backend

    try:
        if get_backend(getattr(args, "backend", None)).name != "cpu":
            return ()
    except Exception:  # the command reports a backend that cannot run
        return ()
    known = get_backend("cpu").op("compile_ahead", "PLANS")
    return tuple(plan for plan in plans if plan in known) if plans[0] in known else ()


def _forks_workers(args: Any) -> bool:
    """Whether a ``--workers`` job forks its workers from this process, which then loads their
    kernels (:func:`gpu_text.jobs.workers.start_method`)."""
    from gpu_text.jobs.pieces import ShardSettings
    from gpu_text.jobs.workers import start_method

    try:
        return start_method(ShardSettings(backend=getattr(args, "backend", None))) == "fork"
    except Exception:  # the job reports what is wrong
        return False


def _output_format(args: Any) -> str | None:
    """The format ``gpu-text tokenize`` writes (as the command tells it), None when unknown."""
    try:
        if getattr(args, "output_dir", None) is not None:
            return args.output_format or "parquet"
        from gpu_text.outputs import output_format

        return output_format(args.paths[-1], args.output_format)
    except Exception:
        return None


@contextlib.contextmanager
def _listening(listener: CompileNotice) -> Iterator[CompileNotice]:
    from numba.core import event

    class Forward(event.Listener):  # defined here: Numba is imported only when listening
        def on_start(self, ev: Any) -> None:
            listener.on_start(ev)

        def on_end(self, ev: Any) -> None:
            listener.on_end(ev)

    forward = Forward()
    event.register("numba:compile", forward)
    try:
        yield listener
    finally:
        event.unregister("numba:compile", forward)


def _inputs(folder: Path) -> dict[str, str]:
    """Tiny input files of every kind the commands read, written into ``folder``."""
    english = _ENGLISH.read_text(encoding="utf-8").splitlines()[:120]
    files = {
        "dict": _DICTIONARY, "raw": _RAW, "segmented": _SEGMENTED, "conll": _CONLL,
        "conll_in": "It PRP\nran VBD\n", "pattern": "U:%x[0,0]\nU1:%x[0,1]\nB\n",
        "candidates": "南京\n南京市\n市长\n长江\n大桥\n江\n",
        "english": "".join(line.lower() + "\n" for line in english),
        "mixed": "".join(line + "\n" for line in english[:20]) + _RAW,
        "pairs": "god\tlord\t8\nwater\tland\t3\nman\twoman\t6\n",
    }
    paths = {}
    for name, text in files.items():
        path = folder / f"{name}.txt"
        path.write_text(text, encoding="utf-8")
        paths[name] = str(path)
    paths["model"] = str(_MODEL)
    paths["out"] = str(folder / "out")
    return paths


# Per command, the runs that exercise what it compiles: argument lists of gpu-text, with {name}
# standing for the files of _inputs. Options that choose other kernels (jieba's lattice, another
# sampler or optimiser, offsets) have a run each.
WARMUPS: dict[str, list[list[str]]] = {
    "info": [["info", "--json"]],
    "segment": [["segment", "--dict", "{dict}", "{raw}", "{out}.seg"],
                ["segment", "--dict", "{dict}", "--compat", "jieba", "{raw}", "{out}.seg"]],
    "train-dict": [["train-dict", "--candidates", "{candidates}", "--target", "4", "{raw}", "{out}.dict"]],
    "score": [["score", "{segmented}", "{segmented}", "--words", "{segmented}"]],
    "train-tokenizer": [["train-tokenizer", "{mixed}", "-o", "{out}.model", "--vocab-size", "600",
                         "--extra-tokens", "<mask>"],
                        ["train-tokenizer", "--method", "unigram", "{mixed}", "-o", "{out}.unigram", "--vocab-size",
                         "400"]],
    # a Unigram model is trained first: its row encoder compiles apart from BPE's
    "tokenize": [["tokenize", "--model", "{model}", "{mixed}", "{out}.parquet"],
                 ["tokenize", "--model", "{model}", "--offsets", "{mixed}", "{out}.parquet"],
                 ["train-tokenizer", "--method", "unigram", "{mixed}", "-o", "{out}.unigram", "--vocab-size", "400"],
                 ["tokenize", "--model", "{out}.unigram", "{mixed}", "{out}.parquet"]],
    "crf": [["crf", "train", "--segmented", "--max-iterations", "3", "{segmented}", "{out}.crf"],
            ["crf", "train", "--segmented", "--rho1", "0", "--max-iterations", "3", "{segmented}", "{out}.crf"],
            ["crf", "segment", "--model", "{out}.crf", "{raw}", "{out}.txt"],
            ["crf", "eval", "--segmented", "--model", "{out}.crf", "{segmented}"],
            ["crf", "train", "--pattern", "{pattern}", "--algorithm", "sgd-l1", "--max-iterations", "3", "{conll}",
             "{out}.conll.crf"],
            ["crf", "label", "--model", "{out}.conll.crf", "{conll_in}", "{out}.txt"]],
    "word2vec": [["word2vec", "train", "{english}", "--output", "{out}.vec", "--size", "8", "--min-count", "1",
                  "--epochs", "1"],
                 ["word2vec", "train", "{english}", "--output", "{out}.bin", "--size", "8", "--min-count", "1",
                  "--epochs", "1", "--skipgram", "--negative", "3"],
                 ["word2vec", "similar", "{out}.vec", "the", "--topn", "2"],
                 ["word2vec", "eval", "{out}.vec", "--similarity", "{pairs}"],
                 ["word2vec", "cluster", "{out}.vec", "--k", "3", "--output", "{out}.clusters"]],
    "lda": [["lda", "train", "{english}", "--topics", "3", "--iterations", "2", "--output", "{out}.lda"],
            ["lda", "train", "{english}", "--topics", "60", "--iterations", "2", "--sampler", "sparse",
             "--output", "{out}.lda60"],
            ["lda", "infer", "--model", "{out}.lda/model.npz", "{english}", "--iterations", "2",
             "--output", "{out}.theta"],
            ["lda", "topics", "--model", "{out}.lda/model.npz", "--coherence", "{english}"]],
}
# The commands (every subcommand of each) that take --backend.
BACKEND_OPTION = frozenset({"segment", "train-dict", "train-tokenizer", "tokenize", "crf", "word2vec", "lda"})


def warmup(main: Callable[[list[str]], int], commands: list[str] | None = None, backend: str | None = None,
           report: Callable[[str, float, int], Any] | None = None) -> dict[str, float]:
    """Compile (or load from the cache) everything ``commands`` (default: all of :data:`WARMUPS`)
    use, by running each through ``main`` (:func:`gpu_text.cli.main`, passed in: the CLI imports
    this module) on tiny inputs; returns the seconds each took. ``backend`` is passed as
    ``--backend`` (default: the commands' own default). ``report(command, seconds, compiled)`` is
    called after each, ``compiled`` counting the functions compiled (0: all were cached).

    >>> from gpu_text.cli import main
    >>> sorted(warmup(main, ["score"]))
    ['score']
    """
    names = list(WARMUPS) if not commands else commands
    unknown = [name for name in names if name not in WARMUPS]
    if unknown:
        raise ValueError(f"no warm-up for {', '.join(unknown)} (commands: {', '.join(WARMUPS)})")
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="gpu-text-warmup-") as folder, \
            _listening(CompileNotice(io.StringIO(), quiet=True)) as counter:
        paths = _inputs(Path(folder))
        for name in names:
            start, compiled = time.perf_counter(), counter.compiles
            for argv in WARMUPS[name]:
                argv = [arg.format(**paths) for arg in argv]
                if backend is not None and name in BACKEND_OPTION:
                    argv += ["--backend", backend]
                _run_quietly(main, argv, paths)
            seconds[name] = time.perf_counter() - start
            if report is not None:
                report(name, seconds[name], counter.compiles - compiled)
    return seconds


def _run_quietly(main: Callable[[list[str]], int], argv: list[str], paths: dict[str, str]) -> None:
    """Runs ``gpu-text argv`` with its output captured (no notice: the warm-up reports itself) and
    no compile-ahead child (the commands one after another share kernels this process already
    holds, which a child would compile again: 7% more wall time measured; and the warm-up counts
    what it compiles); raises with the command's own message when it fails."""
    out, err = io.StringIO(), io.StringIO()
    previous = {name: os.environ.get(name) for name in (NOTICE_VAR, AHEAD_VAR)}
    os.environ.update({NOTICE_VAR: "0", AHEAD_VAR: "0"})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if argv[0] == "segment":  # the segmenter cache entry of the tiny dictionary: not worth keeping
            _forget_segmenter(argv)
    if code != 0:
        message = err.getvalue().strip().splitlines()
        raise RuntimeError(f"warm-up of 'gpu-text {' '.join(argv[:2])}' failed: {message[-1] if message else code}")


def _forget_segmenter(argv: list[str]) -> None:
    from gpu_text.segment.commands import segmenter_cache_path

    compat = argv[argv.index("--compat") + 1] if "--compat" in argv else None
    path = segmenter_cache_path(argv[argv.index("--dict") + 1], compat, "raise")
    if path is not None:
        path.unlink(missing_ok=True)


def numba_cache_location() -> str:
    """Where this process keeps compiled kernels (see the module docstring for Numba's order).

    >>> isinstance(numba_cache_location(), str)
    True
    """
    from gpu_text.backend import get_backend

    op = get_backend("cpu").op("utf8", "utf8_string_stats")
    stats = getattr(op, "stats", None)
    return str(getattr(stats, "cache_path", "unknown"))


def cmd_warmup(args: Any) -> int:
    """``gpu-text warmup [--commands ...] [--backend B]``: compiles what the commands use, printing
    the seconds each took and how many functions it compiled (0: already cached). ``args.cli_main``
    is the CLI's entry point (set by :func:`gpu_text.cli.build_parser`)."""
    def report(name: str, seconds: float, compiled: int) -> None:
        print(f"warmup {name}: {seconds:.1f} s, {compiled} functions compiled", file=sys.stderr, flush=True)

    start = time.perf_counter()
    warmup(args.cli_main, args.commands, args.backend, report)
    print(f"warmup: {time.perf_counter() - start:.1f} s in all; Numba cache: {numba_cache_location()}",
          file=sys.stderr)
    return 0


def add_commands(subparsers: Any) -> None:
    """Register ``warmup``.

    >>> import argparse
    >>> sub = argparse.ArgumentParser().add_subparsers()
    >>> add_commands(sub)
    >>> sub.choices["warmup"].parse_args(["--commands", "tokenize", "segment"]).commands
    ['tokenize', 'segment']
    """
    from gpu_text.cli_helpers import add_command

    parser = add_command(subparsers, "warmup", cmd_warmup,
                         "compile the CPU kernels the commands use ahead of time (container images, CI)")
    parser.add_argument("--commands", nargs="+", choices=list(WARMUPS), metavar="COMMAND",
                        help=f"the commands to prepare (default: all of {', '.join(WARMUPS)})")
    parser.add_argument("--backend", choices=["auto", "cuda", "cpu"], default=None,
                        help="passed to the commands (default: $GPU_TEXT_BACKEND, else CUDA when a GPU is usable)")
