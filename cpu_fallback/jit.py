"""The options every Numba function of the CPU layer is compiled with. No CUDA twin: build settings.

``cache=True`` keeps compiled code on disk between processes (``$NUMBA_CACHE_DIR``), ``nogil=True``
lets the thread pools of the encoders run jitted code in parallel.

>>> sorted(JIT)
['cache', 'nogil']
"""
from __future__ import annotations

JIT = dict(cache=True, nogil=True)
