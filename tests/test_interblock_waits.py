"""Kernels whose blocks wait for each other, under the emulator's interleaved mode (issue 16).

Without it the emulator runs blocks one after another, so a block only ever waits for blocks that
have finished: a missing wait or a publish before the data passes every test. Interleaved
(``EmulatedModule(interleave=K)``), K blocks are resident, start in a seeded shuffled order and
switch at atomics, coherent loads, fences, barriers and steps; a block that just changed global
memory is often held back until the others cannot go on (see tests/cuda_emulator/cuda_emu.h).

Here: the mode's own kernels (tests/cuda_emulator/kernels/interblock.cu) and mutants of them that
sequential blocks cannot tell apart from the right ones (a missing wait, a count before the data);
the library's one-pass tiled kernels (decoupled look-back in UTF-8 decoding, BPE and the trie
search, the land-and-join waits of the pre-tokenizer and normalizer scans) and the segmenter's
"last block" pattern, interleaved, against their Numba twins or references; and the look-back
built with its wait removed (``-DGT_EMU_BREAK_LOOKBACK``), which sequential blocks decode right
and interleaved ones do not.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gpu_text.backend import Backend, get_backend
from gpu_text.batch import TextBatch
from gpu_text.kernel_sources import kernel_source_dir, kernel_source_path
from tests.cuda_emulator.emulator import EmulatedModule, EmulationError, default_cache_dir
from tests.test_utf8_kernels import host

pytestmark = pytest.mark.skipif(os.environ.get("GPU_TEXT_SKIP_EMULATION") == "1",
                                reason="emulated kernels run in CI, not in the device check")

INTERBLOCK = Path(__file__).resolve().parent / "cuda_emulator" / "kernels" / "interblock.cu"
RESIDENT = 8
SEEDS = (1, 2, 3)


class InterleavedRuntime:
    """Kernel runtime with numpy arrays and the library's kernels built for interleaved blocks
    (``resident`` 0: one after another); ``sources`` replaces some families' ``.cu`` files."""

    xp = np

    def __init__(self, seed: int, resident: int = RESIDENT, defines: tuple[str, ...] = (),
                 sources: dict[str, Path] | None = None) -> None:
        self.seed, self.resident, self.defines, self.sources = seed, resident, defines, sources or {}
        self._modules: dict[str, EmulatedModule] = {}

    def module(self, family: str) -> EmulatedModule:
        if family not in self._modules:
            source = self.sources.get(family, kernel_source_path(family))
            self._modules[family] = EmulatedModule(
                str(source), include_dirs=[str(kernel_source_dir())], defines=self.defines,
                interleave=self.resident, interleave_seed=self.seed)
        return self._modules[family]

    def function(self, family: str, name: str):
        return self.module(family).get_function(name)


def interleaved(seed: int, resident: int = RESIDENT, defines: tuple[str, ...] = (),
                sources: dict[str, Path] | None = None) -> Backend:
    return Backend("cuda-emulated-interleaved", np, InterleavedRuntime(seed, resident, defines, sources))


def poison_empty_arrays() -> None:
    """np.empty fills numbers with 0xA5 bytes: memory no kernel wrote is garbage, as on a GPU, not a
    stale copy of the right answer (a block that reads too early reads that)."""
    allocate = np.empty

    def poisoned(*args, **kwargs):
        array = allocate(*args, **kwargs)
        if array.dtype.kind in "iuf":
            array.reshape(-1).view(np.uint8).fill(0xA5)
        return array

    np.empty = poisoned


@pytest.fixture(autouse=True)
def _garbage_in_new_arrays(monkeypatch):
    monkeypatch.setattr(np, "empty", np.empty)  # undone after the test
    poison_empty_arrays()


def assert_same(got, want) -> None:
    for g, w in zip(got, want):
        np.testing.assert_array_equal(host(g), host(w))


# ------------------------------------------------------------------ the mode itself
def interblock(interleave: int = RESIDENT, defines: tuple[str, ...] = ()) -> EmulatedModule:
    return EmulatedModule(str(INTERBLOCK), defines=defines, interleave=interleave)


def chained_prefix(module: EmulatedModule, seed: int, n_tiles: int = 24, block: int = 64):
    """(whether every tile got the right exclusive prefix, the tile each block took)."""
    values = np.random.default_rng(seed).integers(0, 1000, n_tiles * block).astype(np.int64)
    counter = np.zeros(1, np.uint64)
    flags = np.zeros(n_tiles + 1, np.uint32)
    prefix = np.zeros(n_tiles + 1, np.int64)
    out = np.full(n_tiles, -1, np.int64)
    tile_of_block = np.full(n_tiles, -1, np.int64)
    module.get_function("chained_prefix")((n_tiles,), (block,), (values, np.int64(values.size), counter, flags,
                                                                 prefix, out, tile_of_block), interleave_seed=seed)
    sums = values.reshape(n_tiles, block).sum(axis=1)
    return bool(np.array_equal(out, np.cumsum(sums) - sums)), tile_of_block


def test_waits_across_blocks_in_shuffled_order():
    module = interblock()
    for seed in SEEDS:
        right, tile_of_block = chained_prefix(module, seed)
        assert right
        assert sorted(tile_of_block) == list(range(tile_of_block.size))
        assert not np.array_equal(tile_of_block, np.arange(tile_of_block.size))  # blocks did not start in order


def test_a_missing_wait_is_caught_only_when_interleaved():
    sequential, broken = interblock(0, ("SKIP_WAIT",)), interblock(RESIDENT, ("SKIP_WAIT",))
    for seed in SEEDS:
        assert chained_prefix(sequential, seed)[0]
        assert not chained_prefix(broken, seed)[0]


def last_block_total(module: EmulatedModule, seed: int, n_blocks: int = 20) -> bool:
    values = np.random.default_rng(seed).integers(-50, 1000, 5000).astype(np.int64)
    parts = np.full(n_blocks, -(1 << 40), np.int64)
    done, total = np.zeros(1, np.uint64), np.zeros(1, np.int64)
    module.get_function("last_block_total")((n_blocks,), (64,), (values, np.int64(values.size), parts, done, total),
                                            interleave_seed=seed)
    return int(total[0]) == int(values.sum())


def test_last_block_pattern_and_a_count_before_the_data():
    right, sequential = interblock(), interblock(0, ("PUBLISH_EARLY",))
    early = interblock(RESIDENT, ("PUBLISH_EARLY",))
    assert all(last_block_total(right, seed, n_blocks) for seed in SEEDS for n_blocks in (3, 20))
    assert all(last_block_total(sequential, seed) for seed in SEEDS)
    assert not any(last_block_total(early, seed) for seed in SEEDS)


def resident_blocks(module: EmulatedModule, seed: int, n_blocks: int = 40) -> tuple[int, np.ndarray]:
    in_flight, ticket = np.zeros(2, np.uint32), np.zeros(1, np.uint32)
    order, scratch = np.zeros(n_blocks, np.uint32), np.zeros(1, np.uint32)
    module.get_function("resident_blocks")((n_blocks,), (32,), (in_flight, ticket, order, np.int32(4), scratch),
                                           interleave_seed=seed)
    assert scratch[0] == n_blocks * 32 * 4 and in_flight[0] == 0
    return int(in_flight[1]), order


def test_resident_set_and_start_order():
    most, order = resident_blocks(interblock(0), 1)
    assert most == 1 and np.array_equal(order, np.arange(order.size))
    module = interblock(4)
    most, order = resident_blocks(module, 1)
    assert 2 <= most <= 4
    assert sorted(order) == list(range(order.size)) and not np.array_equal(order, np.arange(order.size))
    assert np.array_equal(resident_blocks(module, 1)[1], order)  # the seed fixes the schedule
    assert not np.array_equal(resident_blocks(module, 2)[1], order)


def test_a_wait_that_never_ends_is_a_deadlock():
    with pytest.raises(EmulationError, match="deadlock: 20000 spin-waits"):
        interblock().get_function("wait_forever")((4,), (32,), (np.zeros(1, np.uint32),))


def test_interleave_is_checked():
    with pytest.raises(ValueError, match="interleave must be"):
        interblock(65)


# ------------------------------------------------------------------ the library's kernels
def utf8_decode(backend: Backend, batch: TextBatch, wide: bool):
    from tests.test_utf8_kernels import _decode_with

    return _decode_with(backend.runtime, batch.data, batch.offsets, wide)


@pytest.fixture(scope="module")
def utf8_batch():
    from tests.reference import utf8 as reference
    from tests.utf8_inputs import batch_of, random_strings, straddling_strings

    batch = batch_of(random_strings(np.random.default_rng(1), 3000) + straddling_strings())  # 35 tiles
    return batch, reference.utf8_decode(batch.data, batch.offsets)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_utf8_look_back(utf8_batch, seed):
    batch, expected = utf8_batch
    for wide in (False, True):
        cps, pos, rows = utf8_decode(interleaved(seed), batch, wide)
        assert_same((cps, pos, rows), expected)


def test_look_back_without_its_wait_is_caught(utf8_batch):
    """The look-back built with its wait removed: right when blocks run one after another (what the
    emulator alone checked before), wrong under every interleaved schedule tried."""
    batch, expected = utf8_batch
    broken = ("GT_EMU_BREAK_LOOKBACK",)

    def right(backend: Backend) -> bool:
        return all(np.array_equal(g, w) for g, w in zip(utf8_decode(backend, batch, False), expected))

    assert right(interleaved(1, 0, broken))
    assert not any(right(interleaved(seed, RESIDENT, broken)) for seed in SEEDS)


def pretokenize_long(backend: Backend | str, config: tuple[str, str, bool] = ("word", "keep", False)) -> tuple:
    """The pre-token starts of 320 KB of text (pretokenize_land_join: 5 tiles of 256 chunks)."""
    from gpu_text.tokenizer.pre_tokenizer import PreTokenDFA
    from tests.test_pre_tokenizer_kernels import LONG

    batch = TextBatch.from_strings(LONG)
    backend = get_backend(backend) if isinstance(backend, str) else backend
    return backend.op("pre_tokenizer", "pretokenize")(batch.data, batch.offsets, PreTokenDFA.compile(*config))


def normalize_many_tiles(backend: Backend | str) -> tuple:
    """Text, row offsets and alignment of strings over 3 tiles of normalize_chunk_land_join (and
    746 blocks of normalize_slots)."""
    from gpu_text.tokenizer.normalizer import Normalizer
    from tests.utf8_inputs import ADVERSARIAL

    strings = list(ADVERSARIAL[:12])
    strings += [b"".join(strings) * 40, b" " * 70_000, ("\u3000\u2460 q" * 15_000).encode()]
    out = Normalizer("NMT_NFKC_CF", add_dummy_prefix=True).normalize(TextBatch.from_strings(strings), backend)
    return out.text.data, out.text.offsets, out.alignment.values


@pytest.mark.parametrize("config", [("word", "keep", False), ("isolate", "split", True)])
def test_pretokenize_land_and_join(config):
    assert_same(pretokenize_long(interleaved(2), config), pretokenize_long("cpu", config))


def test_normalize_land_join_and_slots():
    assert_same(normalize_many_tiles(interleaved(3)), normalize_many_tiles("cpu"))


# A land-and-join scan with its wait removed: what the interleaved blocks make of it, run in a
# child process, since a join that reads another block's landing before it is written follows
# garbage and may read far out of bounds (as on a GPU).
WORKLOADS = {"pre_tokenizer": pretokenize_long, "normalizer": normalize_many_tiles}
LAND_WAITS = {
    "pre_tokenizer": "            while (atomicAdd(&order[tile], 0ull) == 0) __nanosleep(64);\n",
    "normalizer": "        while (tile > 0 && atomicAdd(&order[tile], 0ull) == 0) __nanosleep(64);\n",
}
CHILD = """
import sys
from pathlib import Path
from tests.test_interblock_waits import outcome_without_wait
print(outcome_without_wait(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
"""


def outcome_without_wait(family: str, source: Path, resident: int, seed: int) -> str:
    """"right" or "wrong": the family's workload with the kernel file `source`, against the CPU's."""
    poison_empty_arrays()
    got = WORKLOADS[family](interleaved(seed, resident, sources={family: source}))
    want = WORKLOADS[family]("cpu")
    return "right" if all(np.array_equal(host(g), host(w)) for g, w in zip(got, want)) else "wrong"


@pytest.mark.parametrize("family", sorted(LAND_WAITS))
def test_land_join_without_its_wait_is_caught(family):
    """Right when blocks run one after another; under interleaving the join reads a landing not
    yet written: a wrong result or a crash, for every seed tried."""
    import subprocess
    import sys

    source = kernel_source_path(family).read_text()
    assert source.count(LAND_WAITS[family]) == 1, "the wait this test removes has changed; update LAND_WAITS"
    # beside the emulator's builds, at a fixed path: the library is built once, then reused
    broken = default_cache_dir() / "mutants" / f"{family}_without_land_wait.cu"
    broken.parent.mkdir(parents=True, exist_ok=True)
    partial = broken.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(source.replace(LAND_WAITS[family], ""))
    os.replace(partial, broken)  # whole, for test processes that share the cache
    assert outcome_without_wait(family, broken, 0, 1) == "right"
    for seed in SEEDS[:2]:
        child = subprocess.run([sys.executable, "-c", CHILD, family, str(broken), str(RESIDENT), str(seed)],
                               capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], timeout=600)
        outcome = child.stdout.strip() if child.returncode == 0 else f"crashed (exit {child.returncode})"
        print(f"{family} without its land wait, seed {seed}: {outcome}")
        assert outcome != "right", (seed, child.stderr[-2000:])


def test_bpe_pre_tokens():
    """Pre-tokens found from the marks and packed by bpe_pre_tokens' look-back (260 blocks)."""
    from cpu_fallback import bpe as numba_bpe
    from tests.test_bpe_kernels import marked_texts, random_model

    rng = np.random.default_rng(16)
    model = random_model(rng, 80, byte_fallback=True)
    data, offsets, marks = marked_texts(rng, 2000)
    want = numba_bpe.bpe_encode_rows(data, offsets, marks, *model.device_tables("cpu"))
    assert_same(model.encode_marked(data, offsets, marks, interleaved(1)), want)


def test_trie_prefix_search():
    """The trie's matches, packed by look-back (lookback_exclusive in cuda/trie.cu)."""
    from gpu_text.trie import DoubleArrayTrie
    from tests.test_lattice_kernels import ALPHABET

    rng = np.random.default_rng(21)
    words = sorted({"".join(rng.choice(ALPHABET, int(rng.integers(1, 4)))) for _ in range(40)})
    trie = DoubleArrayTrie.build(words, np.arange(len(words), dtype=np.int32))
    texts = ["".join(rng.choice(ALPHABET, int(rng.integers(0, 400)))).encode() for _ in range(200)]
    data = np.frombuffer(b"".join(texts), np.uint8).copy()
    ends = np.cumsum([len(t) for t in texts]).astype(np.int64)
    starts = ends - np.array([len(t) for t in texts], np.int64)
    want = trie.prefix_search_spans(data, starts, ends, "cpu")
    assert_same(trie.prefix_search_spans(data, starts, ends, interleaved(3)), want)


def test_segment_rows_last_block(monkeypatch):
    """Han runs cut in pieces every 16 bytes: the last block (a count after a fence) of
    segment_pieces (94 blocks), segment_settle (376) and segment_resolve (188) reads what every
    other block wrote."""
    import gpu_text.cuda_ops.segment as launchers
    from gpu_text.segment import Segmenter
    from tests.test_segment_kernels import HAN, random_dictionary, run_segment_rows, segment_rows_args

    monkeypatch.setattr(launchers, "CHUNK_BYTES", 16)
    rng = np.random.default_rng(12)
    segmenter = Segmenter(random_dictionary(rng, 200))
    batch = TextBatch.from_strings(["".join(rng.choice(HAN, 2000)) for _ in range(4)] + ["a", ""])
    cpu = get_backend("cpu")
    want = cpu.op("segment", "segment_rows")(*segment_rows_args(segmenter, batch, cpu))
    backend = interleaved(2)
    assert_same(run_segment_rows(segmenter, segment_rows_args(segmenter, batch, backend), backend), want)
