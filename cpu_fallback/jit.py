"""The options every Numba function of the CPU layer is compiled with. No CUDA twin: build settings.

``cache=True`` keeps compiled code on disk between processes (``$NUMBA_CACHE_DIR``), ``nogil=True``
lets the thread pools of the encoders run jitted code in parallel. ``no_cfunc_wrapper=True`` skips
the C-callable wrapper Numba otherwise builds for every function (only ``@cfunc`` users and
functions passed as first-class function values need it, and none is): 5% less compiling on a
first run (tokenize, measured). ``forceinline`` and ``_nrt``
are said explicitly: a function that does not say them inherits them from the caller that first
compiles it.

:data:`INLINE` is for the small helpers of the hot loops (a character's bytes, a hash lookup, a
trie step): LLVM inlines them into every caller (``alwaysinline``), where an ordinary call would
pass each array as a struct of seven words. Numba's own ``inline="always"`` gives the same code but
splices the helper's IR into every call site before typing, and retypes the grown caller: that
cost the row encoder tens of seconds of compiling (type inference and the inlining pass), where
LLVM's inliner costs a fraction of a second. The helpers are compiled without Numba's reference
counting (``_nrt=False``: they allocate nothing and return no array), so the arrays they take are
not counted at every call: those counts, calls to ``NRT_incref``/``NRT_decref`` even on borrowed
views (:mod:`cpu_fallback.borrow`), were a quarter of the row encoder's time. :data:`NOREF` is for the larger steps that allocate
nothing either (a row's normalization, a pre-token's merge): ordinary calls, without the counts.

:func:`inline` compiles such a helper without its CPython wrapper too (the code that unboxes
Python arguments and boxes the result: jitted callers never run it, yet Numba builds and optimises
it for every signature): about 10% less compiling on a first run (tokenize with a BPE model: 17.0-18.5
CPU s -> 15.2-16.5, measured). A wrapper-less function called from Python would jump to a wrapper
that is not there and crash the interpreter, so the dispatcher :func:`inline` returns answers
Python calls (tests, doctests, a debugging session) with a twin compiled from the same Python
function with a wrapper, in memory only; jitted callers never see it.

>>> sorted(JIT), INLINE["forceinline"], INLINE["_nrt"], NOREF["forceinline"], NOREF["_nrt"]
(['_nrt', 'cache', 'forceinline', 'no_cfunc_wrapper', 'nogil'], True, False, False, False)
>>> from cpu_fallback.merge_tables import pair_key
>>> pair_key(1, 2) == pair_key.python_twin(1, 2), len(pair_key.python_twin.overloads) > 0
(True, True)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba.core import config
from numba.core.registry import CPUDispatcher

JIT = dict(cache=True, nogil=True, forceinline=False, _nrt=True, no_cfunc_wrapper=True)
INLINE = dict(JIT, forceinline=True, _nrt=False)
NOREF = dict(JIT, _nrt=False)


class _JittedOnly(CPUDispatcher):
    """A dispatcher whose compiled code has no CPython wrapper: jitted callers call it as any
    other; a call from Python goes to :attr:`python_twin` instead of the missing wrapper."""

    _twin: CPUDispatcher | None = None

    @property
    def python_twin(self) -> CPUDispatcher:
        """The same function compiled with a CPython wrapper and without the disk cache (a cached
        twin would share this dispatcher's cache entries, which Numba keys by the function's code,
        not by its options: the twin could load a wrapper-less entry)."""
        if self._twin is None:
            options = {k: v for k, v in self.targetoptions.items() if k != "no_cpython_wrapper"}
            self._twin = CPUDispatcher(py_func=self.py_func, locals=self.locals, targetoptions=options)
        return self._twin

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.python_twin(*args, **kwargs)


def inline(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` compiled with :data:`INLINE`'s options and without a CPython wrapper, for jitted
    callers; Python calls are answered by a twin with a wrapper (see the module docstring)."""
    if config.DISABLE_JIT:
        return func
    options = {k: v for k, v in INLINE.items() if k != "cache"}
    dispatcher = _JittedOnly(py_func=func, locals={},
                             targetoptions=dict(options, nopython=True, no_cpython_wrapper=True))
    dispatcher.enable_caching()
    return dispatcher
