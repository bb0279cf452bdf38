"""TextBatch and RaggedArray: constructors, pyarrow zero-copy, padding, DLPack, edge cases."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text import TextBatch, utf8
from gpu_text.ragged import RaggedArray
from tests.conftest import require

pa = require("pyarrow")


def test_from_strings_round_trip():
    items = ["héllo", "", "世界", "😀" * 3]
    batch = TextBatch.from_strings(items)
    assert batch.to_pylist() == items
    assert batch.offsets.dtype == np.int64 and batch.data.dtype == np.uint8
    assert batch.lengths.tolist() == [len(s.encode()) for s in items]


def test_lone_surrogates_are_kept_not_lost():
    batch = TextBatch.from_strings(["a\ud800b"])
    assert batch[0] == b"a\xed\xa0\x80b"
    assert utf8.decode(batch, "cpu").codepoints.to_pylist() == [[0x61, 0xFFFD, 0xFFFD, 0xFFFD, 0x62]]


def test_empty_batch():
    batch = TextBatch.from_strings([])
    assert len(batch) == 0 and batch.nbytes == 0
    assert utf8.decode(batch, "cpu").codepoints.to_pylist() == []
    padded, lengths = utf8.decode(batch, "cpu").codepoints.to_padded()
    assert padded.shape == (0, 0) and lengths.shape == (0,)


def test_single_string_is_rejected_with_a_clear_error():
    with pytest.raises(TypeError, match="single str"):
        utf8.decode("abc", "cpu")
    with pytest.raises(TypeError, match="single bytes"):
        TextBatch.from_strings(b"abc")


@pytest.mark.parametrize("items, index, kind", [(["a", 5], 1, "int"), ([300_000_000], 0, "int"),
                                                (["a", "b", None], 2, "NoneType"), ([["a"]], 0, "list")])
def test_items_that_are_not_text_are_refused_by_index(items, index, kind):
    """A number is not turned into that many NUL bytes, nor anything else into text."""
    with pytest.raises(TypeError, match=f"item {index} is {kind}, not str"):
        TextBatch.from_strings(items)


def test_every_bytes_like_item_is_accepted():
    batch = TextBatch.from_strings(["é", b"\xff", bytearray(b"ab"), memoryview(b"cd")])
    assert batch.to_bytes_list() == ["é".encode(), b"\xff", b"ab", b"cd"]


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])
def test_from_arrow_zero_copy_with_slice_offset(kind):
    values = ["alpha", "βeta", "", "γάμμα", "δ"]
    array = pa.array(values if kind in (pa.string(), pa.large_string()) else [v.encode() for v in values], kind)
    sliced = array.slice(1, 3)
    batch = TextBatch.from_arrow(sliced)
    assert batch.to_pylist() == values[1:4]
    # the bytes are a view of Arrow's buffer, not a copy
    data_address = sliced.buffers()[2].address
    assert data_address <= batch.data.ctypes.data < data_address + sliced.buffers()[2].size


def test_from_arrow_chunked_and_nulls():
    chunked = pa.chunked_array([["a", "b"], ["c"]])
    assert TextBatch.from_arrow(chunked).to_pylist() == ["a", "b", "c"]
    with_nulls = pa.array(["a", None, "c"])
    with pytest.raises(ValueError, match="null"):
        TextBatch.from_arrow(with_nulls)
    assert TextBatch.from_arrow(with_nulls, nulls="empty").to_pylist() == ["a", "", "c"]
    with pytest.raises(TypeError, match="string or binary"):
        TextBatch.from_arrow(pa.array([1, 2]))


def test_to_arrow_shares_bytes_and_rejects_invalid_text():
    batch = TextBatch.from_strings(["a", "bc"])
    arrow = batch.to_arrow()
    assert arrow.type == pa.string() and arrow.to_pylist() == ["a", "bc"]
    assert arrow.buffers()[2].address == batch.data.ctypes.data
    bad = TextBatch.from_strings([b"ok", b"\xff"])
    with pytest.raises(ValueError, match="string 1 is not valid UTF-8"):
        bad.to_arrow()
    assert bad.to_arrow(binary=True).to_pylist() == [b"ok", b"\xff"]


def test_from_buffers_validates_and_rebases():
    data = np.frombuffer(b"..hello world", np.uint8)
    batch = TextBatch.from_buffers(data, np.array([2, 7, 8, 13]))
    assert batch.to_pylist() == ["hello", " ", "world"]
    assert batch.data.base is not None  # a view
    with pytest.raises(ValueError, match="outside"):
        TextBatch.from_buffers(data, [0, 100])
    with pytest.raises(ValueError, match="non-decreasing"):
        TextBatch.from_buffers(data, [0, 5, 3])


def test_ragged_padding_truncation_and_mask():
    ragged = RaggedArray(np.arange(1, 7, dtype=np.int32), np.array([0, 3, 3, 6]))
    padded, lengths = ragged.to_padded(pad_value=-1)
    assert padded.tolist() == [[1, 2, 3], [-1, -1, -1], [4, 5, 6]] and lengths.tolist() == [3, 0, 3]
    truncated, lengths = ragged.to_padded(max_length=2)
    assert truncated.tolist() == [[1, 2], [0, 0], [4, 5]] and lengths.tolist() == [2, 0, 2]
    _, mask = ragged.to_padded(max_length=4, return_mask=True)
    assert mask.tolist() == [[True] * 3 + [False], [False] * 4, [True] * 3 + [False]]


def test_ragged_arrow_and_dlpack():
    ragged = RaggedArray(np.arange(5, dtype=np.int32), np.array([0, 2, 5]))
    arrow = ragged.to_arrow()
    assert isinstance(arrow, pa.ListArray) and arrow.to_pylist() == [[0, 1], [2, 3, 4]]
    assert isinstance(ragged.to_arrow(large=True), pa.LargeListArray)
    assert np.from_dlpack(ragged).tolist() == [0, 1, 2, 3, 4]
    assert np.from_dlpack(ragged.offsets).tolist() == [0, 2, 5]


@pytest.mark.slow
def test_batch_over_two_gib_uses_int64_offsets():
    """2.2 GiB of text: offsets past 2**31 stay exact and per-string results are right."""
    size = 2_200_000_000
    data = np.zeros(size, np.uint8)  # NUL bytes: valid one-byte characters
    data[-3:] = np.frombuffer("你".encode(), np.uint8)
    offsets = np.array([0, 5, size - 10, size], np.int64)
    batch = TextBatch.from_buffers(data, offsets)
    assert batch.nbytes == size and batch[2] == b"\x00" * 7 + "你".encode()
    assert utf8.char_length(batch, "cpu").tolist() == [5, size - 15, 8]
    assert utf8.validate(batch, "cpu").tolist() == [True, True, True]
    del data, batch
