"""Read → compute → write with the reading and the writing on their own threads, so a command's
I/O overlaps its kernels: while batch ``k`` is computed, batch ``k + 1`` is read and batch
``k - 1`` written.

The queues between the stages are bounded (``depth`` items each), so memory stays flat however
long the input: a fast reader waits for the compute, a fast compute for the writer. Items keep
their order. Compute runs on the calling thread, where the backend's device context and Numba's
thread pool live; or, with ``lanes=N``, on N threads that take items as they free up, each inside
its own ``lane_context(i)`` (on a GPU: a CUDA stream per lane, so one chunk's copies and kernels
run while another lane waits on its stream), the results put back in input order before they are
written. The first error of any stage stops the
other two and is raised, unchanged, by :func:`run_pipeline`; the reader's iterator is closed, so
its files are. Every stage's busy and waiting time is measured (``--verbose`` prints it), and
the CPU seconds of its own thread while busy, so a stage whose Python work competes with the
compute for the cores (or the GIL) shows up as CPU, not only as wall time.

>>> squares = []
>>> stats = run_pipeline(range(5), lambda x: x * x, squares)
>>> squares, stats.items
([0, 1, 4, 9, 16], 5)
"""
from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ContextManager, Generic, TypeVar

T = TypeVar("T")
U = TypeVar("U")

_END = object()  # after the last item
_POLL_S = 0.05  # how often a blocked stage looks whether another one has failed


@dataclass
class StageTime:
    """Seconds a stage spent working, and waiting on its neighbours (``waited_in``: for an item to
    come, ``waited_out``: for room in the next queue); ``cpu``: the CPU seconds of the stage's own
    thread (threads, for compute lanes) while working (``time.thread_time``), without the work it
    hands to other threads (Numba's pool, an encoder's worker threads).

    >>> StageTime(busy=2.0).busy + StageTime().waited_in + StageTime().cpu
    2.0
    """

    busy: float = 0.0
    waited_in: float = 0.0
    waited_out: float = 0.0
    cpu: float = 0.0


@dataclass
class PipelineStats:
    """What :func:`run_pipeline` did: items through it, wall seconds, and each stage's times.

    >>> PipelineStats(items=2, wall=1.0).summary()
    'read 0.00 s, compute 0.00 s, write 0.00 s busy (CPU of their threads 0.00, 0.00, 0.00 s) in 1.00 s wall (2 items)'
    """

    items: int = 0
    wall: float = 0.0
    read: StageTime = field(default_factory=StageTime)
    compute: StageTime = field(default_factory=StageTime)
    write: StageTime = field(default_factory=StageTime)

    def summary(self) -> str:
        """One line: every stage's busy seconds, its thread's CPU seconds and the wall time."""
        return (f"read {self.read.busy:.2f} s, compute {self.compute.busy:.2f} s, write {self.write.busy:.2f} s "
                f"busy (CPU of their threads {self.read.cpu:.2f}, {self.compute.cpu:.2f}, {self.write.cpu:.2f} s) "
                f"in {self.wall:.2f} s wall ({self.items} items)")


class _Failure:
    """The first error of any stage; setting it tells every stage to stop."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        self.error: BaseException | None = None
        self.stop = threading.Event() if stop is None else stop
        self._lock = threading.Lock()

    def record(self, error: BaseException) -> None:
        with self._lock:
            if self.error is None:
                self.error = error
        self.stop.set()


class _Channel(Generic[T]):
    """A bounded queue whose ``put``/``get`` give up (returning ``False`` / ``_END``) once any
    stage has failed, so that no thread blocks forever on a dead neighbour."""

    def __init__(self, depth: int, failure: _Failure) -> None:
        self.items: queue.Queue[Any] = queue.Queue(maxsize=depth)
        self.failure = failure

    def put(self, item: Any) -> bool:
        while not self.failure.stop.is_set():
            try:
                self.items.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def get(self) -> Any:
        while not self.failure.stop.is_set():
            try:
                return self.items.get(timeout=_POLL_S)
            except queue.Empty:
                continue
        return _END


def run_pipeline(items: Iterable[T], compute: Callable[[T], U], write: Callable[[U], Any] | list,
                 depth: int = 2, lanes: int = 1, lane_context: Callable[[int], ContextManager[Any]] | None = None,
                 stop: threading.Event | None = None) -> PipelineStats:
    """Feed ``items`` (iterated on a reader thread: the iteration is the reading) through
    ``compute`` (on this thread; with ``lanes > 1`` on that many threads, each inside
    ``lane_context(lane)`` when given) to ``write`` (on a writer thread; a list is appended to), in
    order, with at most ``depth`` items waiting between two stages. Returns the stage times
    (``compute``: summed over the lanes). ``stop``, when given, is set as the pipeline stops on an
    error: an ``items`` iterator that waits on something besides the pipeline (another stage's
    progress) watches it, so that it never keeps the reader thread from ending.

    Any exception, in any stage, stops the pipeline and is raised here as it was raised; a
    ``KeyboardInterrupt`` on this thread stops the other two as well.

    >>> def compute(x):
    ...     if x == 3:
    ...         raise ValueError("bad item 3")
    ...     return x
    >>> run_pipeline(range(10), compute, [])
    Traceback (most recent call last):
    ...
    ValueError: bad item 3
    """
    for name, value in (("depth", depth), ("lanes", lanes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    sink = write.append if isinstance(write, list) else write
    stats = PipelineStats()
    failure = _Failure(stop)
    inbox: _Channel[T] = _Channel(depth, failure)
    outbox: _Channel[U] = _Channel(depth, failure)
    started = time.perf_counter()
    reader = threading.Thread(target=_read, args=(iter(items), inbox, failure, stats.read),
                              name="gpu-text-reader", daemon=True)
    writer = threading.Thread(target=_write, args=(sink, outbox, failure, stats.write),
                              name="gpu-text-writer", daemon=True)
    reader.start()
    writer.start()
    try:
        if lanes == 1 and lane_context is None:
            _compute(compute, inbox, outbox, failure, stats)
        else:
            _compute_lanes(compute, inbox, outbox, failure, stats, lanes, lane_context)
    except BaseException as exc:  # KeyboardInterrupt too: the other stages must stop
        failure.record(exc)
    finally:
        writer.join()
        failure.stop.set()  # the writer is done: a reader still blocked on a full queue may stop
        reader.join()
        stats.wall = time.perf_counter() - started
    if failure.error is not None:
        raise failure.error
    return stats


def _compute(compute: Callable[[T], U], inbox: "_Channel[T]", outbox: "_Channel[U]", failure: _Failure,
             stats: PipelineStats) -> None:
    timing = stats.compute
    while True:
        mark = time.perf_counter()
        item = inbox.get()
        now = time.perf_counter()
        timing.waited_in += now - mark
        if item is _END:
            break
        cpu = time.thread_time()
        result = compute(item)
        mark = time.perf_counter()
        timing.cpu += time.thread_time() - cpu
        timing.busy += mark - now
        stats.items += 1
        if not outbox.put(result):
            return
        timing.waited_out += time.perf_counter() - mark
    outbox.put(_END)


def _compute_lanes(compute: Callable[[T], U], inbox: "_Channel[T]", outbox: "_Channel[U]", failure: _Failure,
                   stats: PipelineStats, lanes: int, lane_context: Callable[[int], ContextManager[Any]] | None) -> None:
    """``lanes`` compute threads; results wait in ``done`` until every earlier one is passed on, and
    a lane does not take a new item while ``depth + lanes`` results wait, so memory stays bounded."""
    taking = threading.Lock()  # an item's number is its place in the input: taken under the lock
    order = threading.Condition()
    done: dict[int, Any] = {}
    state = {"taken": 0, "next": 0, "ended": False}
    limit = outbox.items.maxsize + lanes

    def lane(number: int) -> None:
        try:
            with lane_context(number) if lane_context is not None else contextlib.nullcontext():
                while not failure.stop.is_set():
                    with order:
                        while len(done) >= limit and not failure.stop.is_set():
                            order.wait(_POLL_S)
                    mark = time.perf_counter()
                    with taking:
                        item = _END if state["ended"] else inbox.get()
                        if item is _END:
                            state["ended"] = True
                            return
                        place = state["taken"]
                        state["taken"] += 1
                    now, cpu = time.perf_counter(), time.thread_time()
                    result = compute(item)
                    cpu = time.thread_time() - cpu
                    with order:
                        stats.compute.waited_in += now - mark
                        stats.compute.busy += time.perf_counter() - now
                        stats.compute.cpu += cpu
                        stats.items += 1
                        done[place] = result
                        while state["next"] in done:  # in input order, whichever lane finished
                            if not outbox.put(done.pop(state["next"])):
                                return
                            state["next"] += 1
                        order.notify_all()
        except BaseException as exc:
            failure.record(exc)

    threads = [threading.Thread(target=lane, args=(i,), name=f"gpu-text-lane-{i}", daemon=True) for i in range(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failure.error is None:
        outbox.put(_END)


def _read(items: Iterator[T], inbox: "_Channel[T]", failure: _Failure, timing: StageTime) -> None:
    try:
        while not failure.stop.is_set():
            mark, cpu = time.perf_counter(), time.thread_time()
            try:
                item = next(items)
            except StopIteration:
                inbox.put(_END)
                return
            now = time.perf_counter()
            timing.busy += now - mark
            timing.cpu += time.thread_time() - cpu
            if not inbox.put(item):
                return
            timing.waited_out += time.perf_counter() - now
    except BaseException as exc:
        failure.record(exc)
    finally:
        close = getattr(items, "close", None)
        if close is not None:  # a generator's ``with`` blocks (its open files) end here
            try:
                close()
            except BaseException as exc:
                failure.record(exc)


def _write(sink: Callable[[U], Any], outbox: "_Channel[U]", failure: _Failure, timing: StageTime) -> None:
    try:
        while True:
            mark = time.perf_counter()
            result = outbox.get()
            now = time.perf_counter()
            timing.waited_in += now - mark
            if result is _END:
                return
            cpu = time.thread_time()
            sink(result)
            timing.busy += time.perf_counter() - now
            timing.cpu += time.thread_time() - cpu
    except BaseException as exc:
        failure.record(exc)


__all__ = ["PipelineStats", "StageTime", "run_pipeline"]
