"""cpu_fallback.jit's helpers without a CPython wrapper: jitted callers get the wrapper-less code,
Python callers the twin, and no Python call reaches the code that has no wrapper."""
from __future__ import annotations

import sys
from types import ModuleType

import numpy as np
import pytest
from numba import njit, types
from numba.core.dispatcher import Dispatcher

import cpu_fallback
from cpu_fallback import bpe, double_array, merge_tables, normalizer, utf8  # noqa: F401  (their helpers)
from cpu_fallback.double_array import arrays_of, trie_step, trie_value
from cpu_fallback.jit import INLINE, _JittedOnly


def _has_wrapper(dispatcher: Dispatcher) -> list[bool]:
    """For each compiled signature: whether its library defines the CPython wrapper (only for code
    compiled in this process: Numba cannot show the IR of code loaded from its disk cache)."""
    return [cres.fndesc.llvm_cpython_wrapper_name in cres.library.get_llvm_str()
            for cres in dispatcher.overloads.values()]


def _uncached(dispatcher: Dispatcher) -> Dispatcher:
    """A dispatcher of the same class and options, without the disk cache."""
    return type(dispatcher)(py_func=dispatcher.py_func, locals={}, targetoptions=dict(dispatcher.targetoptions))


@njit(cache=False)
def _walk(state, check, label, eow, word):
    pos = np.int64(0)
    for byte in word:
        pos = trie_step(state, check, label, pos, byte)
        if pos < 0:
            return -1
    return trie_value(state, check, label, eow, pos)


def test_jitted_callers_get_code_without_a_wrapper():
    state, check, label, eow = arrays_of([b"he", b"she"], [5, 9])
    assert _walk(state, check, label, eow, np.frombuffer(b"she", np.uint8)) == 9
    signatures = {trie_step: next(iter(trie_step.overloads)),  # the one _walk compiled or loaded
                  merge_tables.pair_key: (types.int64, types.int64), utf8.encoded_length: (types.int64,)}
    for helper, signature in signatures.items():
        fresh = _uncached(helper)
        fresh.compile(signature)
        assert _has_wrapper(fresh) == [False], helper


def test_python_calls_are_answered_by_a_twin_with_a_wrapper():
    state, check, label, eow = arrays_of([b"he", b"she"], [5, 9])
    compiled_before = set(trie_step.overloads)
    h = trie_step(state, check, label, np.int64(0), np.uint8(ord("h")))  # would crash without the twin
    e = trie_step(state, check, label, h, np.uint8(ord("e")))
    assert h > 0 and trie_value(state, check, label, eow, e) == 5
    assert trie_step(state, check, label, np.int64(0), np.uint8(ord("x"))) == -1
    assert set(trie_step.overloads) == compiled_before  # the Python calls compiled nothing here
    assert trie_step.python_twin is trie_step.python_twin
    assert _has_wrapper(trie_step.python_twin) == [True] * len(trie_step.python_twin.overloads) != []
    assert not isinstance(trie_step.python_twin, _JittedOnly)


def test_python_and_jitted_calls_agree():
    data = np.frombuffer("aé中😀\xff".encode("utf-8", "surrogatepass"), np.uint8)

    @njit(cache=False)
    def widths(data):
        out, i = [], 0
        while i < data.size:
            width, key = merge_tables.char_at(data, i, data.size)
            out.append((width, key))
            i += width
        return out

    from_python, i = [], 0
    while i < data.size:
        width, key = merge_tables.char_at(data, i, data.size)
        from_python.append((int(width), int(key)))
        i += int(width)
    assert [(int(w), int(k)) for w, k in widths(data)] == from_python and len(from_python) == 5


def _modules() -> list[ModuleType]:
    return [m for name, m in sorted(sys.modules.items())
            if name.startswith(f"{cpu_fallback.__name__}.") and isinstance(m, ModuleType)]


def test_every_wrapper_less_dispatcher_is_a_jitted_only_one():
    """A dispatcher compiled without the wrapper and callable from Python as a plain dispatcher
    would crash the interpreter: every such one must route Python calls to its twin."""
    found = 0
    for module in _modules():
        for value in vars(module).values():
            if isinstance(value, Dispatcher) and value.targetoptions.get("no_cpython_wrapper"):
                assert isinstance(value, _JittedOnly), value
                assert {k: value.targetoptions[k] for k in INLINE if k != "cache"} == \
                    {k: v for k, v in INLINE.items() if k != "cache"}
                assert value._cache.__class__.__name__ == "FunctionCache"  # cached like the others
                found += 1
    assert found >= 20  # the helpers of bpe, merge_tables, double_array, normalizer, utf8...


@pytest.mark.parametrize("helper", [merge_tables.pair_key, utf8.encoded_length])
def test_twin_is_built_once_per_helper(helper):
    assert helper.python_twin is helper.python_twin
    assert helper.python_twin.py_func is helper.py_func
