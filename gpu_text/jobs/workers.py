"""Where the shards of a job are tokenized: in this process (:class:`InlinePool`, one worker),
or in worker processes (:class:`ProcessPool`: ``--workers N`` CPU processes, or ``--devices
0,1,...``, one process per GPU), each loading the tokenizer once and running its shards one
after another through one pipeline (:func:`gpu_text.jobs.pieces.tokenize_shards`), taking the
next shard when it has read the current one's input (dynamic assignment: a slow shard never
holds up the others, and a worker holds at most one shard ahead).

Each worker has its own environment: ``NUMBA_NUM_THREADS`` (the cores divided among the
workers, unless already set) and, for ``--devices``, ``CUDA_VISIBLE_DEVICES`` (its one GPU). On
the CPU backend (Linux) the parent loads the tokenizer and the encoder's kernels from Numba's
cache once and forks the workers (:func:`start_method`): a spawned worker starts an interpreter,
imports Numba and loads the model and the kernels again, 1.2 CPU s each. Forking is safe only
while the parent runs one thread, has not started Numba's thread pool (an OpenMP pool does not
survive a fork) and will not use CUDA; otherwise, and for ``--devices`` (each worker makes its
own CUDA context), the workers are spawned (a fresh interpreter inheriting nothing), as they are
with ``GPU_TEXT_WORKER_START=spawn``. Parent and workers exchange JSON messages over pipes: a
worker asks for a shard (``next``) and the parent answers with one, or ``stop`` when none is
left; the worker reports progress (input bytes read) and each shard's result. A worker dies with
its parent (``PR_SET_PDEATHSIG`` on Linux, else it notices its parent is gone), so a killed job
leaves nothing running; a worker that dies is reported with the shard it was on.

>>> [sorted(env) for env in worker_environments(2, cores=4, environ={})]
[['NUMBA_NUM_THREADS'], ['NUMBA_NUM_THREADS']]
>>> worker_environments(2, devices=["0", "3"], cores=4, environ={})[1]
{'NUMBA_NUM_THREADS': '2', 'CUDA_VISIBLE_DEVICES': '3'}
"""
from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from gpu_text.jobs.pieces import ShardSettings, tokenize_shards
from gpu_text.jobs.shards import Shard
from gpu_text.process_memory import keep_freed_memory

Progress = Callable[[int], None]
Report = Callable[[dict[str, Any]], Any]  # a shard's result message
Record = Callable[[int, dict[str, Any]], Any]  # a worker's number and its shard's result message
START_VAR = "GPU_TEXT_WORKER_START"  # "spawn": start the workers so even where they could be forked
COMPILE_AHEAD_THREAD = "compile-ahead"  # cpu_fallback.compile_ahead's reader of its child's progress


def worker_environments(workers: int, devices: Sequence[str] | None = None, cores: int | None = None,
                        environ: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The environment variables each worker process starts with (see the module docstring)."""
    environ = os.environ if environ is None else environ
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = environ.get("NUMBA_NUM_THREADS") or str(max(1, cores // workers))
    envs = [{"NUMBA_NUM_THREADS": threads} for _ in range(workers)]
    for env, device in zip(envs, devices or ()):
        env["CUDA_VISIBLE_DEVICES"] = device
    return envs


def start_method(settings: ShardSettings, devices: Sequence[str] | None = None) -> str:
    """How :class:`ProcessPool` starts the workers of a job with ``settings``: ``"fork"`` where
    that is safe (see the module docstring), else ``"spawn"``.

    >>> start_method(ShardSettings(backend="cpu"), devices=["0", "1"])
    'spawn'
    """
    if devices is not None or os.environ.get(START_VAR, "").strip().lower() == "spawn":
        return "spawn"
    if not sys.platform.startswith("linux"):  # macOS's system libraries are not fork-safe; Windows has no fork
        return "spawn"
    from gpu_text.backend import get_backend

    try:
        on_cpu = get_backend(settings.backend).name == "cpu"
    except Exception:  # a backend that cannot run: the workers, spawned, say why
        return "spawn"
    # the compile-ahead child's reader (the command line's first-run compiling) is ended before the
    # fork (ProcessPool), so it does not count as a thread the workers would lose
    threads = sum(thread.name != COMPILE_AHEAD_THREAD for thread in threading.enumerate())
    return "fork" if on_cpu and threads == 1 and _numba_pool_unstarted() else "spawn"


def _end_compile_ahead() -> None:
    """End the command line's compile-ahead child, if any (its kernels are loaded by now), and
    its reader thread."""
    from gpu_text.backend import get_backend

    with contextlib.suppress(ImportError, AttributeError):  # no compile-ahead: nothing to end
        get_backend("cpu").op("compile_ahead", "stop")()


def _numba_pool_unstarted() -> bool:
    """Whether Numba's thread pool has not been started in this process, and a forked worker can
    still choose its size (read from ``NUMBA_NUM_THREADS`` once, when Numba is imported: a forked
    worker sets it afresh, :func:`_set_numba_threads`)."""
    import numba
    from numba.np.ufunc import parallel

    try:
        numba.threading_layer()
    except ValueError:  # "not initialized": no pool yet
        return hasattr(parallel, "NUM_THREADS") and hasattr(numba.config, "NUMBA_NUM_THREADS")
    return False


def _set_numba_threads(threads: int) -> None:
    """Size this forked worker's Numba thread pool, which it starts on its first encoding (the
    parent imported Numba with the parent's size)."""
    import numba
    from numba.np.ufunc import parallel

    numba.config.NUMBA_NUM_THREADS = parallel.NUM_THREADS = threads


def peak_rss_mb() -> float | None:
    """This process's peak resident memory so far, in MB.

    >>> peak_rss_mb() > 0
    True
    """
    try:
        import resource
    except ImportError:  # not on this system (Windows): no figure rather than a wrong one
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1 << 20) if sys.platform == "darwin" else peak / 1024, 1)  # bytes on macOS, KiB on Linux


class ShardWorker:
    """What a worker does: holds the tokenizer (loaded once, and checked against the settings)
    and tokenizes the shards it is given, one after another through one pipeline."""

    def __init__(self, model: str, settings: ShardSettings) -> None:
        from gpu_text.cli_helpers import load_file
        from gpu_text.tokenizer.bulk import check_specials, load_tokenizer

        self.model = model
        self.tokenizer = load_file(model, load_tokenizer, "tokenizer model")
        s = self.settings = settings
        check_specials(self.tokenizer, model, s.add_bos, s.add_eos, s.append_eod, s.pack)

    def load_kernels(self) -> None:
        """Load the CPU encoder's kernels (and the Parquet writer's), as the command line compiles
        them ahead (``cpu_fallback.compile_ahead.PLANS``), from Numba's cache without running them
        (compiling any it lacks): workers forked from this process start with them, and no Numba
        thread pool is started here.

        >>> from gpu_text.demo import MODEL
        >>> ShardWorker(str(MODEL), ShardSettings(backend="cpu")).load_kernels()
        """
        from gpu_text.backend import get_backend
        from gpu_text.tokenizer.tokenizer_file import model_method

        try:
            load = get_backend("cpu").op("compile_ahead", "load")
        except (ImportError, AttributeError):  # no plans: each worker loads its kernels where it calls them
            return
        load(f"tokenize-{model_method(self.model)}", *["parquet"] * (self.settings.output_format == "parquet"))

    def run(self, next_shard: Callable[[], Shard | None], report: Report, progress: Progress | None = None) -> None:
        """Tokenize the shards ``next_shard`` gives until it gives ``None``, calling ``report``
        with each one's result message (:func:`gpu_text.jobs.pieces.tokenize_shards`; a ``done``
        one also says this worker's peak memory, device and Numba threads).

        >>> import functools, os, tempfile
        >>> from gpu_text.demo import MODEL
        >>> d = tempfile.mkdtemp(); bad = os.path.join(d, "bad.txt.gz"); _ = open(bad, "wb").write(b"\\x1f\\x8b?")
        >>> results = []
        >>> ShardWorker(str(MODEL), ShardSettings(backend="cpu")).run(
        ...     functools.partial(next, iter([Shard(0, bad, "bad", d, "parquet")]), None), results.append)
        >>> [(r["kind"], r["input_error"], "damaged compressed data" in r["error"]) for r in results]
        [('failed', True, True)]
        """
        def done(result: dict[str, Any]) -> None:
            if result["kind"] == "done":
                result.update(peak_rss_mb=peak_rss_mb(), device=os.environ.get("CUDA_VISIBLE_DEVICES"),
                              numba_threads=_numba_threads())
            report(result)

        tokenize_shards(self.tokenizer, next_shard, self.settings, done, _Updates(progress) if progress else None)


def _numba_threads() -> int:
    import numba

    return int(numba.get_num_threads())


class _Updates:
    """A progress bar stand-in for the reader: ``update(n)`` passes the bytes on."""

    def __init__(self, report: Progress) -> None:
        self.report = report

    def update(self, n: int) -> None:
        self.report(int(n))


class WorkerDied(RuntimeError):
    """A worker process ended without reporting its shard (killed, out of memory, crashed)."""


class InlinePool:
    """One worker, in this process (the default ``--workers 1``): no start-up, same results."""

    def __init__(self, model: str, settings: ShardSettings) -> None:
        self.worker = ShardWorker(model, settings)
        self.workers = 1
        self.start = "inline"

    def run(self, shards: Sequence[Shard], progress: Progress, record: Record) -> None:
        """Call ``record(0, result)`` for every shard, in order, on the pipeline's writer thread
        (see :meth:`ShardWorker.run`); an error ``record`` raises stops the job and is raised here."""
        waiting = deque(shards)
        self.worker.run(lambda: waiting.popleft() if waiting else None, lambda result: record(0, result), progress)

    def close(self) -> None:
        pass


class ProcessPool:
    """``len(environments)`` worker processes, each started with its environment and ``start``
    (:func:`start_method`; see the module docstring); :meth:`run` hands a shard to whichever
    worker asks for one (a worker asks when it has read its current shard's input, so it holds at
    most one shard ahead)."""

    def __init__(self, model: str, settings: ShardSettings, environments: Sequence[dict[str, str]],
                 start: str = "spawn") -> None:
        context = multiprocessing.get_context(start)
        self.workers, self.start = len(environments), start
        self.finished = False
        self.processes: list[Any] = []
        self.connections: list[Connection] = []
        self.told_to_stop: set[int] = set()
        parent = os.getpid()
        if start == "fork":  # the workers inherit the tokenizer and the kernels; its errors are raised here
            shared = ShardWorker(model, settings)
            shared.load_kernels()  # waiting for the compile-ahead child, on a first run, for its kernels
            _end_compile_ahead()  # its reader thread would be lost in the fork, its waits inherited
            gc.freeze()  # the collector in a worker then never writes to (and so copies) the pages it inherits
        setup = json.dumps({"model": model, "settings": settings.to_dict(), "parent": parent})
        try:
            for number, environment in enumerate(environments):
                ours, theirs = context.Pipe()
                if start == "fork":  # the parent's ends of the pipes, its own among them: closed in the worker
                    target, args = forked_worker_main, (theirs, shared, [*self.connections, ours], parent)
                else:
                    target, args = worker_main, (theirs, setup)
                process = context.Process(target=target, args=args, name=f"gpu-text-worker-{number}", daemon=True)
                with _environment(environment):  # a worker starts with the environment of now
                    process.start()
                theirs.close()
                self.processes.append(process)
                self.connections.append(ours)
            gc.unfreeze()  # this process collects as before
            for number in range(self.workers):
                self._started(number)
        except BaseException:
            gc.unfreeze()
            self.close()
            raise

    def _started(self, number: int) -> None:
        """Wait for worker ``number`` to have loaded the model: a model it cannot load, or options
        the model cannot honour, are an error now, before the job makes any output."""
        connection, process = self.connections[number], self.processes[number]
        try:
            wait([connection, process.sentinel])
            message = json.loads(connection.recv_bytes())
        except (EOFError, OSError):  # it exited without a word
            process.join()
            raise WorkerDied(f"worker {number} (pid {process.pid}) died at start-up (exit code {process.exitcode})") \
                from None
        if message["kind"] == "start-failed":
            raise ValueError(message["error"] if message["options"] else f"worker {number}: {message['error']}")

    def run(self, shards: Sequence[Shard], progress: Progress, record: Record) -> None:
        """Call ``record(worker, result)`` for every shard as each finishes; raises
        :class:`WorkerDied` when a worker ends without reporting its shards."""
        self.waiting = deque(shards)
        self.holding: dict[int, list[Shard]] = {n: [] for n in range(self.workers)}
        self.stopped: set[int] = set()
        remaining = len(self.waiting)
        while remaining:
            alive = [n for n in range(self.workers) if n not in self.stopped]
            if not alive:
                raise WorkerDied("every worker has stopped with shards left")
            signalled = wait([self.connections[n] for n in alive] + [self.processes[n].sentinel for n in alive])
            for number in alive:
                connection, process = self.connections[number], self.processes[number]
                if connection not in signalled and process.sentinel not in signalled:
                    continue
                while number not in self.stopped:  # every message it sent before the sentinel, first
                    try:
                        if not connection.poll():
                            break
                        message = json.loads(connection.recv_bytes())
                    except (EOFError, OSError):  # its end of the pipe closed: it has exited
                        self._ended(number)
                        break
                    if message["kind"] == "progress":
                        progress(message["bytes"])
                    elif message["kind"] == "next":
                        self._assign(number)
                    else:  # a shard's result: done or failed
                        held = self.holding[number]
                        held[:] = [shard for shard in held if shard.index != message["index"]]
                        remaining -= 1
                        record(number, message)
                if process.sentinel in signalled and number not in self.stopped:
                    self._ended(number)
        self.finished = True

    def _ended(self, number: int) -> None:
        """Worker ``number`` has exited: fine once told to stop with nothing held, else an error
        naming the shard it was on."""
        process = self.processes[number]
        process.join()
        self.stopped.add(number)
        held = self.holding[number]
        if held or number not in self.told_to_stop:
            code = process.exitcode
            how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            where = f" while tokenizing shard {held[0].name} ({held[0].input})" if held else " between shards"
            raise WorkerDied(f"worker {number} (pid {process.pid}) died ({how}){where}")

    def _assign(self, number: int) -> None:
        if self.waiting:
            shard = self.waiting.popleft()
            self.holding[number].append(shard)
            self.connections[number].send_bytes(json.dumps({"kind": "shard", "shard": _shard_dict(shard)}).encode())
        else:
            self._stop(number)

    def _stop(self, number: int) -> None:
        self.told_to_stop.add(number)
        with contextlib.suppress(OSError):
            self.connections[number].send_bytes(b'{"kind": "stop"}')

    def close(self) -> None:
        """Stop every worker (at once, unless every shard is done: a shard a worker was on stays
        pending) and wait for them."""
        for number, process in enumerate(self.processes):
            if self.finished:  # a worker not told to stop yet (still starting) is told now
                if number not in self.told_to_stop:
                    self._stop(number)
                process.join(timeout=5)
            if process.is_alive():
                process.kill()
            process.join()
        for connection in self.connections:
            connection.close()


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _shard_dict(shard: Shard) -> dict[str, Any]:
    return {"index": shard.index, "input": shard.input, "name": shard.name, "output_dir": shard.output_dir,
            "format": shard.format, "pieces": shard.pieces}


def worker_main(connection: Connection, setup: str) -> None:
    """A spawned worker process: load the tokenizer, then tokenize the shards the parent hands it
    (one per request, see :class:`ProcessPool`) until it says stop (or is gone)."""
    config = json.loads(setup)
    _serve(connection, int(config["parent"]),
           lambda: ShardWorker(config["model"], ShardSettings.from_dict(config["settings"])))


def forked_worker_main(connection: Connection, worker: ShardWorker, parent_ends: Sequence[Connection],
                       parent: int) -> None:
    """A forked worker process: as :func:`worker_main`, with the parent's tokenizer. The parent's
    ends of the pipes it inherited are closed: one left open here would keep its worker from
    seeing the parent's end."""
    for end in parent_ends:
        end.close()
    _set_numba_threads(int(os.environ["NUMBA_NUM_THREADS"]))
    _serve(connection, parent, lambda: worker)


def _serve(connection: Connection, parent: int, make_worker: Callable[[], ShardWorker]) -> None:
    """A worker process's life: get its :class:`ShardWorker` from ``make_worker``, say whether it
    started, then tokenize shards on request."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    keep_freed_memory()  # a process of its own, chunk after chunk: as the command's (gpu_text.cli.main)
    _die_with_parent(parent)
    lock = threading.Lock()  # the reader thread asks and reports progress while the writer thread reports results

    def send(message: dict[str, Any]) -> None:
        with lock:
            connection.send_bytes(json.dumps(message).encode())

    def progress(n: int) -> None:
        if os.getppid() != parent:  # the parent is gone (where PDEATHSIG is not available)
            os._exit(1)
        send({"kind": "progress", "bytes": n})

    def next_shard() -> Shard | None:  # on the reader thread, the only one that receives
        send({"kind": "next"})
        try:
            message = json.loads(connection.recv_bytes())
        except (EOFError, OSError):  # the parent is gone: so is the job
            os._exit(1)
        return Shard(**message["shard"]) if message["kind"] == "shard" else None

    try:
        worker = make_worker()
    except Exception as exc:  # the model's or the options' fault (a ValueError naming the model), or this worker's
        send({"kind": "start-failed", "error": str(exc) or type(exc).__name__, "options": isinstance(exc, ValueError)})
        return
    send({"kind": "ready"})
    worker.run(next_shard, send, progress)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when its parent dies; exit now if it already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            import ctypes
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    if os.getppid() != parent:
        os._exit(1)


__all__ = ["START_VAR", "InlinePool", "ProcessPool", "ShardWorker", "WorkerDied", "forked_worker_main", "peak_rss_mb",
           "start_method", "worker_environments", "worker_main"]
