"""gpu_text.pipeline: items keep their order, memory stays bounded (the reader never runs far
ahead of the writer), stages really overlap, and an error in any stage stops the others and is
raised unchanged, even when the reader's input never ends."""
from __future__ import annotations

import random
import threading
import time

import pytest

from gpu_text.pipeline import run_pipeline


def run_with_deadline(fn, seconds: float = 20.0):
    """``fn()`` on a thread; fails the test instead of hanging when the pipeline deadlocks."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the pipeline did not finish: a stage is blocked"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.mark.parametrize("depth", [1, 3])
def test_order_is_kept_with_uneven_stage_speeds(depth):
    pauses = random.Random(7)
    delays = [[pauses.random() * 0.002 for _ in range(60)] for _ in range(3)]

    def items():
        for i in range(60):
            time.sleep(delays[0][i])
            yield i

    def compute(i):
        time.sleep(delays[1][i])
        return (i, i * i)

    written = []

    def write(result):
        time.sleep(delays[2][result[0]])
        written.append(result)

    stats = run_with_deadline(lambda: run_pipeline(items(), compute, write, depth=depth))
    assert written == [(i, i * i) for i in range(60)]
    assert stats.items == 60 and stats.wall > 0
    assert stats.read.busy > 0 and stats.compute.busy > 0 and stats.write.busy > 0


def test_memory_is_bounded_by_the_queues():
    depth = 2
    produced = written = 0
    most_ahead = 0
    lock = threading.Lock()

    def items():
        nonlocal produced
        for i in range(100):
            with lock:
                produced += 1
            yield i

    def write(_):
        nonlocal written, most_ahead
        time.sleep(0.001)  # a slow writer: the reader must wait for it, not pile items up
        with lock:
            most_ahead = max(most_ahead, produced - written)
            written += 1

    run_with_deadline(lambda: run_pipeline(items(), lambda i: i, write, depth=depth))
    assert written == 100
    # two full queues, the item each of the three stages holds, and the one being produced
    assert most_ahead <= 2 * depth + 4


def test_stages_overlap():
    """Item 0 is computed while item 2 is read, and written while item 1 is computed: each stage
    waits (a few seconds at most) for the others to get there, which they only can in parallel."""
    reading_2, computing_1 = threading.Event(), threading.Event()
    seen: dict = {}

    def items():
        for i in range(4):
            if i == 2:
                reading_2.set()
            yield i

    def compute(x):
        if x == 0:
            seen["read while computing"] = reading_2.wait(5)
        if x == 1:
            computing_1.set()
        return x

    def write(x):
        if x == 0:
            seen["computed while writing"] = computing_1.wait(5)

    run_with_deadline(lambda: run_pipeline(items(), compute, write, depth=1))
    assert seen == {"read while computing": True, "computed while writing": True}


def endless(closed: list):
    """An input that never ends, noting when it is closed (a reader's files)."""
    try:
        i = 0
        while True:
            yield i
            i += 1
    finally:
        closed.append(True)


def test_a_compute_error_stops_an_endless_reader_and_is_raised_unchanged():
    closed: list = []
    written: list = []

    def compute(x):
        if x == 5:
            raise ValueError("in.txt:6: bad document")
        return x

    with pytest.raises(ValueError, match=r"^in.txt:6: bad document$"):
        run_with_deadline(lambda: run_pipeline(endless(closed), compute, written))
    assert closed == [True]
    assert written == [0, 1, 2, 3, 4][:len(written)]  # what was written is in order and before item 5


def test_a_writer_error_stops_the_reader_and_the_compute():
    closed: list = []
    computed: list = []

    def write(x):
        if x == 3:
            raise OSError(28, "No space left on device")

    def compute(x):
        computed.append(x)
        return x

    with pytest.raises(OSError, match="No space left"):
        run_with_deadline(lambda: run_pipeline(endless(closed), compute, write, depth=2))
    assert closed == [True]
    assert len(computed) <= 3 + 2 * 2 + 2  # stopped soon after the failure, not at the input's end


def test_a_reader_error_is_raised_and_nothing_after_it_is_written():
    def items():
        yield 1
        yield 2
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    written: list = []
    with pytest.raises(UnicodeDecodeError):
        run_with_deadline(lambda: run_pipeline(items(), lambda x: x, written))
    assert written in ([], [1], [1, 2])


def test_keyboard_interrupt_in_compute_stops_everything():
    closed: list = []

    def compute(x):
        if x == 2:
            raise KeyboardInterrupt
        return x

    with pytest.raises(KeyboardInterrupt):
        run_with_deadline(lambda: run_pipeline(endless(closed), compute, []))
    assert closed == [True]


def test_empty_input_and_bad_depth():
    written: list = []
    stats = run_pipeline(iter(()), lambda x: x, written)
    assert written == [] and stats.items == 0
    for depth in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="depth must be a positive integer"):
            run_pipeline([1], lambda x: x, [], depth=depth)


@pytest.mark.parametrize("lanes", [2, 3])
def test_lanes_keep_the_input_order(lanes):
    pauses = random.Random(lanes)
    delays = [pauses.random() * 0.003 for _ in range(80)]

    def compute(i):
        time.sleep(delays[i])  # later items often finish first
        return i * 3

    written = []
    stats = run_with_deadline(lambda: run_pipeline(iter(range(80)), compute, written, depth=2, lanes=lanes))
    assert written == [i * 3 for i in range(80)]
    assert stats.items == 80 and stats.compute.busy > 0


def test_lanes_compute_at_once_each_in_its_context():
    """Item 0's compute waits until item 1's has started, which only a second lane can do; every
    lane runs inside its own context, entered once and left at the end."""
    started_1 = threading.Event()
    entered, left, lane_of = [], [], {}
    local = threading.local()

    class Lane:
        def __init__(self, number):
            self.number = number

        def __enter__(self):
            entered.append(self.number)
            local.lane = self.number

        def __exit__(self, *exc):
            left.append(self.number)

    def compute(x):
        lane_of[x] = local.lane
        if x == 1:
            started_1.set()
        if x == 0:
            assert started_1.wait(5), "a second lane never took item 1"
        return x

    written = []
    run_with_deadline(lambda: run_pipeline(iter(range(6)), compute, written, lanes=2, lane_context=Lane))
    assert written == list(range(6))
    assert sorted(entered) == sorted(left) == [0, 1]
    assert lane_of[0] != lane_of[1]


def test_an_error_in_a_lane_stops_the_job():
    closed: list = []

    def compute(x):
        if x == 5:
            raise ValueError("bad item 5")
        return x

    with pytest.raises(ValueError, match="bad item 5"):
        run_with_deadline(lambda: run_pipeline(endless(closed), compute, [], lanes=3))
    assert closed == [True]


def test_lanes_keep_memory_bounded():
    depth, lanes = 2, 3
    produced = written = 0
    most_ahead = 0
    lock = threading.Lock()

    def items():
        nonlocal produced
        for i in range(120):
            with lock:
                produced += 1
            yield i

    def write(_):
        nonlocal written, most_ahead
        time.sleep(0.001)
        with lock:
            most_ahead = max(most_ahead, produced - written)
            written += 1

    run_with_deadline(lambda: run_pipeline(items(), lambda i: i, write, depth=depth, lanes=lanes))
    assert written == 120
    # two full queues, the results waiting for their turn, one item per lane, reader and writer
    assert most_ahead <= 3 * depth + 2 * lanes + 4


def test_lanes_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="lanes must be a positive integer"):
        run_pipeline([], lambda x: x, [], lanes=0)


def _spin(seconds: float) -> None:
    """Work on this thread's CPU for about ``seconds`` of its CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@pytest.mark.parametrize("lanes", [1, 2])
def test_stage_cpu_counts_the_stage_threads_own_work(lanes):
    def items():
        for i in range(4):
            _spin(0.02)  # the reading works on the CPU
            yield i

    def compute(i):
        _spin(0.02)
        return i

    def write(i):
        time.sleep(0.03)  # the writing waits (a disk, another thread): busy, but no CPU of its own

    stats = run_with_deadline(lambda: run_pipeline(items(), compute, write, lanes=lanes))
    assert stats.items == 4
    slack = 0.05  # thread_time's granularity on a loaded machine
    for stage in (stats.read, stats.compute):
        assert 4 * 0.02 <= stage.cpu <= stage.busy + slack
    assert stats.write.busy >= 4 * 0.03 and stats.write.cpu < stats.write.busy / 2
    assert "CPU of their threads" in stats.summary()
