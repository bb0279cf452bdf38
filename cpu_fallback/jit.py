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

>>> sorted(JIT), INLINE["forceinline"], INLINE["_nrt"], NOREF["forceinline"], NOREF["_nrt"]
(['_nrt', 'cache', 'forceinline', 'no_cfunc_wrapper', 'nogil'], True, False, False, False)
"""
from __future__ import annotations

JIT = dict(cache=True, nogil=True, forceinline=False, _nrt=True, no_cfunc_wrapper=True)
INLINE = dict(JIT, forceinline=True, _nrt=False)
NOREF = dict(JIT, _nrt=False)
