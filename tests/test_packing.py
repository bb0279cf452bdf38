"""--pack N: documents joined with the eos id and cut into N-token rows, the remainder kept as a
last shorter row; the packed rows, joined, are exactly the documents each followed by eos."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.outputs.megatron_reader import read_megatron
from gpu_text.outputs.packing import PackingWriter
from gpu_text.ragged import RaggedArray
from gpu_text.tokenizer.bulk import tokenize_files
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.conftest import require
from tests.test_bulk_tokenize import DOCS, expected_ids

EOS = Tokenizer.from_model_file(MODEL).eos_id


class Collect:
    """A writer that keeps what it is given."""

    def __init__(self) -> None:
        self.rows: list[list[int]] = []

    def write(self, ids, starts, ends) -> None:
        self.rows.extend(ids.to_pylist())

    def close(self) -> int:
        return len(self.rows)

    def discard(self) -> None:
        self.rows = []


def joined_with_eos(rows: list[list[int]], eos: int) -> list[int]:
    return [t for row in rows if row for t in row + [eos]]


def check_packed(packed: list[list[int]], documents: list[list[int]], length: int, eos: int) -> None:
    assert [t for row in packed for t in row] == joined_with_eos(documents, eos)
    assert all(len(row) == length for row in packed[:-1]) and 0 < len(packed[-1]) <= length


@pytest.mark.parametrize("length", [1, 3, 7, 64, 10_000])
def test_packing_keeps_every_token_in_order_whatever_the_chunks(length):
    rng = np.random.default_rng(length)
    lengths = rng.integers(0, 40, 200)
    lengths[::9] = 0
    values = rng.integers(3, 4000, int(lengths.sum())).astype(np.int32)
    documents = RaggedArray(values, np.concatenate([[0], np.cumsum(lengths)]))
    cuts = np.unique(np.concatenate([[0, 200], rng.integers(0, 200, 12)]))
    sink = Collect()
    packer = PackingWriter(sink, length=length, eos_id=2)
    for a, b in zip(cuts[:-1], cuts[1:]):
        packer.write(documents.rows(int(a), int(b)))
    rows = packer.close()
    assert rows == len(sink.rows) == -(-packer.tokens // length)
    check_packed(sink.rows, documents.to_pylist(), length, 2)


def test_an_exact_multiple_has_no_short_row_and_nothing_is_nothing():
    sink = Collect()
    packer = PackingWriter(sink, length=3, eos_id=0)
    packer.write(RaggedArray(np.array([5, 6, 7, 8], np.int32), np.array([0, 2, 2, 4])))
    assert packer.close() == 2 and sink.rows == [[5, 6, 0], [7, 8, 0]]
    empty = Collect()
    packer = PackingWriter(empty, length=3, eos_id=0)
    packer.write(RaggedArray(np.zeros(0, np.int32), np.array([0, 0, 0])))
    assert packer.close() == 0 and empty.rows == []


def test_bad_packing_options_are_refused():
    with pytest.raises(ValueError, match="positive integer"):
        PackingWriter(Collect(), length=0, eos_id=2)
    with pytest.raises(ValueError, match="no eos piece"):
        PackingWriter(Collect(), length=8, eos_id=-1)
    with pytest.raises(ValueError, match="no byte spans"):
        PackingWriter(Collect(), length=8, eos_id=2).write(RaggedArray(np.zeros(1, np.int32), np.array([0, 1])),
                                                          RaggedArray(np.zeros(1), np.array([0, 1])), None)


def test_cli_pack_to_parquet_with_stats(tmp_path):
    pq = require("pyarrow.parquet")
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(DOCS * 3) + "\n", encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--pack", "128", "--chunk-mb", "1",
                 str(source), str(tmp_path / "packed.parquet")]) == 0
    packed = pq.read_table(tmp_path / "packed.parquet").column("ids").to_pylist()
    check_packed(packed, expected_ids() * 3, 128, EOS)
    stats = json.loads((tmp_path / "packed.parquet.stats.json").read_text())
    tokens = sum(map(len, expected_ids())) * 3
    assert stats["documents"] == 15 and stats["tokens"] == tokens and stats["pack"] == 128
    assert stats["tokens_written"] == tokens + 12 and stats["rows"] == len(packed) == -(-(tokens + 12) // 128)


def test_cli_pack_to_megatron(tmp_path):
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--pack", "1000", str(source),
                 str(tmp_path / "packed.bin")]) == 0
    data = read_megatron(tmp_path / "packed")
    check_packed([s.tolist() for s in data.sequences], expected_ids(), 1000, EOS)
    assert data.document_index.tolist() == list(range(len(data.sequences) + 1))  # a packed row is a document


def test_pack_needs_an_eos_and_no_offsets(tmp_path, capsys):
    source = tmp_path / "docs.txt"
    source.write_text("a\n", encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--pack", "8", "--offsets", str(source),
                 str(tmp_path / "o.parquet")]) == 2
    assert "drop --offsets or --pack" in capsys.readouterr().err
    assert main(["tokenize", "--model", str(MODEL), "--pack", "8", "--add-eos", str(source),
                 str(tmp_path / "o.parquet")]) == 2
    assert "drop --add-eos" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no eos piece"):
        tokenize_files(SimpleNamespace(eos_id=-1), [source], tmp_path / "o.parquet", pack=8, progress=False)
    with pytest.raises(ValueError, match="positive integer"):
        tokenize_files(SimpleNamespace(eos_id=2), [source], tmp_path / "o", output_format="hf", pack=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt"]
