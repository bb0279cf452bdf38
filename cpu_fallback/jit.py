"""The options every Numba function of the CPU layer is compiled with. No CUDA twin: build settings.

``cache=True`` keeps compiled code on disk between processes (``$NUMBA_CACHE_DIR``), ``nogil=True``
lets the thread pools of the encoders run jitted code in parallel. ``forceinline`` is said
explicitly: a function that does not say it inherits it from the caller that first compiles it.

:data:`INLINE` is for the small helpers of the hot loops (a character's bytes, a hash lookup, a
trie step): LLVM inlines them into every caller (``alwaysinline``), where an ordinary call would
pass each array as a struct of seven words. Numba's own ``inline="always"`` gives the same code but
splices the helper's IR into every call site before typing, and retypes the grown caller: that
cost the row encoder tens of seconds of compiling (type inference and the inlining pass), where
LLVM's inliner costs a fraction of a second.

>>> sorted(JIT), INLINE["forceinline"]
(['cache', 'forceinline', 'nogil'], True)
"""
from __future__ import annotations

JIT = dict(cache=True, nogil=True, forceinline=False)
INLINE = dict(JIT, forceinline=True)
