"""The Parquet ids writer (gpu_text.outputs.parquet_ids over cpu_fallback.parquet_pages): what
pyarrow reads back is exactly what pyarrow's own writer wrote, on random and adversarial rows."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpu_text.outputs.parquet_ids as parquet_ids
from gpu_text.outputs.parquet_ids import ParquetIdsWriter
from gpu_text.ragged import RaggedArray


def random_chunk(rng: np.random.Generator) -> RaggedArray:
    lengths = rng.choice([0, 0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 503, 504, 505, 2000], int(rng.integers(0, 40)))
    high = int(rng.choice([1, 2, 3, 255, 256, 16000, 1 << 16, (1 << 22) - 1, 1 << 22, 1 << 30]))
    low = -3 if rng.random() < 0.1 else 0
    values = rng.integers(low, high, int(lengths.sum())).astype(np.int32)
    if rng.random() < 0.2 and values.size:  # long runs of one id
        values[:] = values[0]
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return RaggedArray(values, offsets)


def arrow_written(chunks: list[RaggedArray], path) -> pa.Table:
    schema = pa.schema([pa.field("ids", pa.list_(pa.int32()))])
    with pq.ParquetWriter(path, schema) as writer:
        for chunk in chunks:
            column = pa.ListArray.from_arrays(pa.array(np.asarray(chunk.offsets, np.int32)), pa.array(chunk.values))
            writer.write_table(pa.Table.from_arrays([column], schema=schema))
    return pq.read_table(path)


@pytest.mark.parametrize("page_entries", [7, 64, 1 << 20])
def test_reads_back_as_pyarrows_own_file(tmp_path, monkeypatch, page_entries):
    monkeypatch.setattr(parquet_ids, "PAGE_ENTRIES", page_entries)
    rng = np.random.default_rng(page_entries)
    for trial in range(40):
        chunks = [random_chunk(rng) for _ in range(int(rng.integers(1, 4)))]
        writer = ParquetIdsWriter(str(tmp_path / "ours.parquet"))
        for chunk in chunks:
            writer.write(chunk)
        assert writer.close() == sum(len(c) for c in chunks)
        expected = arrow_written(chunks, tmp_path / "arrow.parquet")
        ours = pq.read_table(tmp_path / "ours.parquet")
        assert ours.num_rows == expected.num_rows
        assert ours.column("ids").to_pylist() == expected.column("ids").to_pylist(), trial
        assert ours.schema.field("ids").type == pa.list_(pa.int32())


def test_bit_widths_and_the_plain_fallback_are_chosen_per_row_group(tmp_path):
    path = tmp_path / "o.parquet"
    writer = ParquetIdsWriter(str(path))
    for values in ([0, 1, 1, 0], [5, 255, 3], [-1, 7], [1 << 22, 2]):
        writer.write(RaggedArray(np.array(values, np.int32), np.array([0, len(values)])))
    writer.close()
    metadata = pq.ParquetFile(path).metadata
    encodings = [metadata.row_group(g).column(0).encodings for g in range(metadata.num_row_groups)]
    assert [("RLE_DICTIONARY" in e) for e in encodings] == [True, True, False, False]
    assert pq.read_table(path).column("ids").to_pylist() == [[0, 1, 1, 0], [5, 255, 3], [-1, 7], [1 << 22, 2]]


def test_an_empty_file_and_empty_rows(tmp_path):
    path = tmp_path / "empty.parquet"
    writer = ParquetIdsWriter(str(path))
    writer.write(RaggedArray(np.zeros(0, np.int32), np.zeros(1, np.int64)))
    assert writer.close() == 0
    assert pq.read_table(path).num_rows == 0
    writer = ParquetIdsWriter(str(path))
    writer.write(RaggedArray(np.zeros(0, np.int32), np.zeros(4, np.int64)))
    writer.close()
    assert pq.read_table(path).column("ids").to_pylist() == [[], [], []]


@pytest.mark.parametrize("width", range(1, 19))
def test_every_bit_width_reads_back(tmp_path, width):
    # whole groups of eight (packed two words at a time up to 16 bits), runs of 63 groups, tails
    rng = np.random.default_rng(width)
    lengths = rng.integers(0, 40, 200)
    lengths[:3] = [0, 8 * 63 * 2 + 5, 1]
    values = rng.integers(0, 1 << width, int(lengths.sum())).astype(np.int32)
    values[-1] = (1 << width) - 1  # the largest id: the width the row group is packed at
    offsets = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    chunk = RaggedArray(values, offsets)
    writer = ParquetIdsWriter(str(tmp_path / "w.parquet"))
    writer.write(chunk)
    writer.close()
    assert pq.read_table(tmp_path / "w.parquet").column("ids").to_pylist() == chunk.to_pylist()


@pytest.mark.parametrize("width", [0, 1, 2, 3, 7, 8, 9, 14, 16, 17, 22])
def test_a_page_never_outgrows_its_bound(width):
    # the page buffer is exactly the bound (Numba checks no index): row lengths that alternate runs
    # of levels with single entries, long rows, empty rows, ids that repeat and ids that do not
    from cpu_fallback.parquet_pages import encode_pages, page_bytes_bound

    rng = np.random.default_rng(width)
    patterns = [[1], [0], [0, 1], [8, 1], [9, 0], [7, 2], [1, 15, 0], [63, 64, 1], [504, 0, 9]]
    for trial in range(60):
        pattern = patterns[trial % len(patterns)]
        lengths = np.array(pattern * int(rng.integers(1, 200)) + [int(rng.integers(0, 3000))])
        offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        high = 1 << width if width else 1 << 30
        values = rng.integers(0, high, int(offsets[-1])).astype(np.int32)
        if trial % 3 == 0:
            values[:] = high - 1
        entries = int(np.maximum(lengths, 1).sum())
        bound = page_bytes_bound(entries, values.size, 1, width)
        guard = 64
        out = np.full(bound + guard, 0xAB, np.uint8)
        end = np.zeros(1, np.int64)
        encode_pages(values, offsets, np.array([0, lengths.size]), width, out, end)
        assert end[0] <= bound - (16 if width else 0), (trial, int(end[0]), bound)
        assert (out[bound:] == 0xAB).all(), trial
