"""Wall-clock timing used by the demo and the benchmarks."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def measure(fn: Callable[[], Any], repeat: int = 5, sync: Callable[[], None] | None = None, warmup: int = 1) -> list[float]:
    """Seconds of ``repeat`` calls of ``fn`` after ``warmup`` untimed ones; ``sync`` waits for a GPU.

    >>> len(measure(lambda: sum(range(10)), repeat=3))
    3
    """
    for _ in range(warmup):
        fn()
        if sync:
            sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - start)
    return times
