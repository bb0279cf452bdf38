"""cuda/lattice.cu's scans of the long spans' pieces by tiles (cuda/tile_scan.cuh) with the blocks
interleaved (the emulator's interleaved mode: resident blocks started in a seeded shuffled order,
switching at atomics, fences, barriers and steps), so that tiles really wait for earlier tiles'
nodes: the Numba twin's tokens, and every scan's output bit for bit the sequential run's. The heads
are max-plus products of doubles, whose last bits depend on the order of the products: the tiles'
Fenwick order fixes it, whichever blocks run first (a look-back summing whatever earlier tiles had
published would not). Wrong heads would still give the right tokens (lattice_resolve solves a piece
exactly where its head misses its table), so the estimates are checked against the exact heads."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

from cpu_fallback.lattice import FALLBACK_IF_NO_CHAR, FLOAT32
from gpu_text.backend import Backend, get_backend
from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path
from gpu_text.trie import DoubleArrayTrie
from tests.cuda_emulator.emulator import EmulatedModule
from tests.test_lattice_kernels import run
from tests.test_lattice_pieces import assert_same
from tests.test_lattice_resolve_steps import kept_launch_args, many_pieces_model, spans_of, twin_scores

pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="emulated kernels run in CI, not in the device check")

UNIGRAM = FALLBACK_IF_NO_CHAR | FLOAT32


class _Interleaved:
    """Kernel runtime with numpy arrays and the lattice's kernels built for interleaved blocks."""

    xp = np

    def __init__(self, seed: int, resident: int) -> None:
        self.seed, self.resident = seed, resident
        self._modules: dict[str, EmulatedModule] = {}

    def module(self, family: str) -> EmulatedModule:
        if family not in self._modules:
            self._modules[family] = EmulatedModule(str(kernel_source_path(family)),
                                                   include_dirs=[str(kernel_source_dir())],
                                                   interleave=self.resident, interleave_seed=self.seed)
        return self._modules[family]

    def function(self, family: str, name: str):
        return self.module(family).get_function(name)


def scan_outputs(args: tuple) -> dict[str, np.ndarray]:
    """From lattice_finish's arguments after the call: each piece's rough head, estimate and error
    (lattice_estimate's scans) and its exit, tokens and tokens after it (lattice_finish's), where
    they were written (the arrays are allocated without a fill)."""
    import gpu_text.cuda_ops.lattice as launchers

    n_anchors, counter = int(args[12]), args[14]
    slot_i = args[16].reshape(-1, launchers.SLOT_INTS)
    slot_f = args[17].reshape(-1, launchers.SLOT_FLOATS)
    front_n, vec_f = args[22], args[24].reshape(-1, launchers.VEC_FLOATS)
    used = [k for k in range(n_anchors) if slot_i[k, 4]] + list(range(n_anchors, n_anchors + int(counter[0])))
    heads = []
    for k in used:
        entries = int(front_n[k]) if k < n_anchors else 1
        following = int(slot_i[k, 2])
        if entries > 1 or (following >= 0 and front_n[following] > 1):  # forced cuts: per entry
            heads.append(np.concatenate([vec_f[k, at:at + entries] for at in (20, 40, 44)]))
        else:
            heads.append(slot_f[k, [17, 3, 4]])
    return {"heads": np.concatenate(heads), "walks": slot_i[used][:, 6:9].copy(), "used": np.array(used)}


def estimate_misses(args: tuple, twin: tuple[np.ndarray, np.ndarray], starts: np.ndarray) -> np.ndarray:
    """Per anchor piece and entry (from lattice_finish's arguments after the call): how far its
    estimate lies from its exact value (the twin's score at the entry: the piece's start, or a
    position of its forced cut's frontier), in units of its error. Measured before the scans by tiles,
    3 spans of 32 KB at 16-byte chunks (no forced cut): at most 0.00254 (mode 0), 0.268 (Unigram);
    the same with them."""
    import gpu_text.cuda_ops.lattice as launchers

    score, scratch_offsets = twin
    n_anchors = int(args[12])
    slot_i = args[16].reshape(-1, launchers.SLOT_INTS)
    slot_f = args[17].reshape(-1, launchers.SLOT_FLOATS)
    front_n, front_off = args[22], args[23].reshape(-1, launchers.FRONT)
    vec_f = args[24].reshape(-1, launchers.VEC_FLOATS)
    misses = []
    for k in range(n_anchors):
        if not slot_i[k, 4]:
            continue
        following, span, entries = int(slot_i[k, 2]), int(slot_i[k, 5]), int(front_n[k])
        at = scratch_offsets[span] + slot_i[k, 0] - starts[span]
        if entries > 1 or (following >= 0 and front_n[following] > 1):
            offsets = front_off[k, :entries] if entries > 1 else [0]
            misses += [abs(vec_f[k, 40 + i] - score[at + offsets[i]]) / vec_f[k, 44 + i] for i in range(entries)]
        else:
            misses.append(abs(slot_f[k, 3] - score[at]) / slot_f[k, 4])
    return np.array(misses)


def forced_cuts_model(rng: np.random.Generator, mode: int) -> tuple[DoubleArrayTrie, np.ndarray]:
    """Every word of 2 or 3 letters of 'a' and 'b': no text of them has a cut point, so every piece
    has a forced cut at either end (vector heads: max-plus products of 4 x 4 matrices, whose order
    matters beyond rounding)."""
    words = sorted("".join(letters) for size in (2, 3) for letters in itertools.product("ab", repeat=size))
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    weights = -(rng.random(len(words)) * 6 + 1)
    if mode & FLOAT32:
        weights = weights.astype(np.float32).astype(np.float64)
    return trie, weights


def ab_spans(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three random texts of `size` letters 'a' and 'b', one after the other: data, starts, ends."""
    data = rng.choice(np.frombuffer(b"ab", np.uint8), 3 * size)
    starts = np.arange(3, dtype=np.int64) * size
    return data, starts, starts + size


@pytest.mark.parametrize("forced", [False, True])
@pytest.mark.parametrize("mode", [0, UNIGRAM])
def test_tile_scans_interleaved(monkeypatch, mode, forced):
    """Three spans of 6 KB at 16-byte chunks (or 12 KB at 32: forced cuts): 1,152 anchors, 5 tiles a
    scan (9 blocks a launch), resident 3 and 8, two seeds each."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.emulated_backend import emulated_backend

    seen = kept_launch_args(monkeypatch, "lattice_finish")
    chunk = 32 if forced else 16
    monkeypatch.setattr(launchers, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(launchers, "LONG_BYTES", 2 * chunk)
    rng = np.random.default_rng(70 + mode)
    trie, weights = (forced_cuts_model if forced else many_pieces_model)(rng, mode)
    data, starts, ends = spans_of(rng, 3, 384 * chunk) if not forced else ab_spans(rng, 384 * chunk)
    want = run(get_backend("cpu"), trie, weights, data, starts, ends, -10.0, 0, mode)
    assert_same(run(emulated_backend(), trie, weights, data, starts, ends, -10.0, 0, mode), want)
    sequential = scan_outputs(seen["args"])
    fronts = int((seen["args"][22][:int(seen["args"][12])] > 1).sum())
    assert sequential["used"].size > 800 and (fronts > 500 if forced else fronts == 0), (sequential["used"].size, fronts)
    # the estimates against the exact values: the twin's scores at each piece's entries
    edges = trie.prefix_search_spans(data, starts, ends, "cpu")
    misses = estimate_misses(seen["args"], twin_scores(data, starts, ends, edges, weights, -10.0, 0, mode), starts)
    print(f"mode {mode}: {sequential['used'].size} pieces, {fronts} forced cuts, largest miss of an estimate / its "
          f"error {misses.max():.3g}")
    assert misses.max() <= 0.5, misses.max()
    for seed, resident in ((1, 3), (2, 8)):
        backend = Backend("cuda-emulated-interleaved", np, _Interleaved(seed, resident))
        assert_same(run(backend, trie, weights, data, starts, ends, -10.0, 0, mode), want)
        got = scan_outputs(seen["args"])
        for name, values in sequential.items():
            np.testing.assert_array_equal(got[name], values, err_msg=f"{name}, seed {seed}, resident {resident}")


def test_long_spans_launch_counts(monkeypatch):
    """A call with long spans: the scans add no launch, sync or upload (their flags share the zeroed
    counter array, their nodes need no fill): the same counts as with the launches' last blocks
    scanning (measured on the commit before: 14 launches, 9 array operations, 2 syncs, 0 uploads)."""
    import gpu_text.cuda_ops.lattice as launchers
    from tests.cuda_emulator.device_counts import measure
    from tests.emulated_backend import counting_emulated_backend

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 16)
    monkeypatch.setattr(launchers, "LONG_BYTES", 32)
    rng = np.random.default_rng(5)
    trie, weights = many_pieces_model(rng, 0)
    data, starts, ends = spans_of(rng, 3, 3 << 10)
    backend = counting_emulated_backend()
    xp = backend.xp
    edges = trie.prefix_search_spans(data, starts, ends, backend)
    arguments = (backend.asarray(data), xp.asarray(starts), xp.asarray(ends), *edges, xp.asarray(weights), -10.0, 0, 0)
    lattice_viterbi = backend.op("lattice", "lattice_viterbi")
    with measure() as counts:
        got = lattice_viterbi(*arguments)
    print(counts.summary())
    assert_same(got, run(get_backend("cpu"), trie, weights, data, starts, ends, -10.0, 0, 0))
    assert (counts.launches, counts.array_ops, counts.syncs, counts.uploads) == (14, 9, 2, 0), counts.summary()
