"""gpu-text tokenize → Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx): read back by our
reader (written from the format), by hand from the raw bytes, and byte-compared with Megatron's
own IndexedDatasetBuilder when megatron-core (and torch) can be imported."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.outputs.megatron import MegatronWriter, token_dtype
from gpu_text.outputs.megatron_reader import read_megatron
from gpu_text.ragged import RaggedArray
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.test_bulk_tokenize import DOCS, expected_ids


def write_docs(tmp_path, docs=DOCS):
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(docs) + "\n", encoding="utf-8")
    return source


def with_eod(rows, eos):
    return [row + [eos] if row else [] for row in rows]


def test_cli_writes_one_sequence_per_document_with_eod(tmp_path):
    source = write_docs(tmp_path)
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--append-eod", str(source),
                 str(tmp_path / "corpus.bin")]) == 0
    eos = Tokenizer.from_model_file(MODEL).eos_id
    expected = with_eod(expected_ids(), eos)
    data = read_megatron(tmp_path / "corpus")
    assert data.dtype == np.uint16  # a 4k vocabulary fits
    assert [s.tolist() for s in data.sequences] == [row for row in expected if row]  # the empty document: none
    assert [d.tolist() for d in data.documents()] == expected
    assert data.document_index.tolist() == [0, 1, 1, 2, 3, 4]  # the empty document repeats its entry


def test_the_index_bytes_follow_the_format(tmp_path):
    """Read the .idx field by field with struct, independently of both the writer and the reader."""
    source = write_docs(tmp_path)
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--output-format", "megatron",
                 str(source), str(tmp_path / "corpus")]) == 0
    rows = [row for row in expected_ids() if row]
    raw = (tmp_path / "corpus.idx").read_bytes()
    assert raw[:9] == b"MMIDIDX\x00\x00"
    version, code, sequences, entries = struct.unpack_from("<QBQQ", raw, 9)
    assert (version, code, sequences, entries) == (1, 8, len(rows), len(DOCS) + 1)
    lengths = struct.unpack_from(f"<{sequences}i", raw, 34)
    pointers = struct.unpack_from(f"<{sequences}q", raw, 34 + 4 * sequences)
    documents = struct.unpack_from(f"<{entries}q", raw, 34 + 12 * sequences)
    assert len(raw) == 34 + 12 * sequences + 8 * entries
    assert list(lengths) == [len(r) for r in rows]
    assert list(pointers) == [2 * sum(map(len, rows[:i])) for i in range(len(rows))]
    assert list(documents) == [0, 1, 1, 2, 3, 4]
    tokens = np.fromfile(tmp_path / "corpus.bin", "<u2").tolist()
    assert tokens == [t for row in rows for t in row]


def test_chunking_does_not_change_the_bytes(tmp_path):
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 50, 300)
    lengths[::17] = 0
    values = rng.integers(0, 70000, int(lengths.sum())).astype(np.int32)
    rows = RaggedArray(values, np.concatenate([[0], np.cumsum(lengths)]))
    outputs = []
    for name, cuts in (("whole", [0, 300]), ("pieces", [0, 1, 2, 40, 41, 299, 300])):
        prefix = tmp_path / name
        writer = MegatronWriter(f"{prefix}.bin", f"{prefix}.idx", vocab_size=70000, eod_id=69999)
        for a, b in zip(cuts[:-1], cuts[1:]):
            writer.write(rows.rows(a, b), None, None)
        assert writer.close() == 300
        outputs.append(((tmp_path / f"{name}.bin").read_bytes(), (tmp_path / f"{name}.idx").read_bytes()))
    assert outputs[0] == outputs[1]
    data = read_megatron(tmp_path / "whole")
    assert data.dtype == np.int32  # 70000 ids do not fit uint16
    assert [d.tolist() for d in data.documents()] == with_eod(rows.to_pylist(), 69999)


def test_ids_that_do_not_fit_the_dtype_are_refused(tmp_path):
    writer = MegatronWriter(str(tmp_path / "x.bin"), str(tmp_path / "x.idx"), vocab_size=1000)
    with pytest.raises(ValueError, match="token id 1000 does not fit"):
        writer.write(RaggedArray(np.array([5, 1000], np.int32), np.array([0, 2])), None, None)
    writer.discard()
    assert token_dtype(65499) == np.uint16 and token_dtype(65500) == np.int32
    with pytest.raises(ValueError, match="eod_id 1000 is outside"):
        MegatronWriter(str(tmp_path / "y.bin"), str(tmp_path / "y.idx"), vocab_size=1000, eod_id=1000)


def test_an_empty_corpus_is_a_valid_dataset(tmp_path):
    writer = MegatronWriter(str(tmp_path / "e.bin"), str(tmp_path / "e.idx"), vocab_size=10)
    assert writer.close() == 0
    data = read_megatron(tmp_path / "e")
    assert data.sequences == [] and data.document_index.tolist() == [0]


def test_a_damaged_index_is_a_clear_error(tmp_path):
    source = write_docs(tmp_path)
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--no-stats", str(source),
                 str(tmp_path / "c.idx")]) == 0
    idx = tmp_path / "c.idx"
    good = idx.read_bytes()
    idx.write_bytes(good[:-5])
    with pytest.raises(ValueError, match="header announces"):
        read_megatron(tmp_path / "c")
    idx.write_bytes(b"NOTMEGA!!" + good[9:])
    with pytest.raises(ValueError, match="not a Megatron index"):
        read_megatron(tmp_path / "c")
    idx.write_bytes(good)
    (tmp_path / "c.bin").write_bytes((tmp_path / "c.bin").read_bytes()[:-2])
    with pytest.raises(ValueError, match="points past its end"):
        read_megatron(tmp_path / "c")


def test_a_failed_job_leaves_no_megatron_files(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"text": "fine"}\n{"text": 5}\n', encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(source), str(tmp_path / "o.bin")]) == 2
    assert "docs.jsonl" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.jsonl"]


def test_megatron_options_are_checked_before_reading(tmp_path, capsys):
    source = write_docs(tmp_path)
    for extra, message in ((["--offsets"], "offsets"), (["--append-eod", "--add-eos"], "drop --add-eos"),
                           (["--append-eod", "--pack", "8"], "drop --append-eod")):
        assert main(["tokenize", "--model", str(MODEL), *extra, str(source), str(tmp_path / "o.bin")]) == 2
        assert message in capsys.readouterr().err
    assert main(["tokenize", "--model", str(MODEL), "--append-eod", str(source), str(tmp_path / "o.parquet")]) == 2
    assert "--append-eod is Megatron's option" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt"]


def test_bytes_match_megatron_core(tmp_path):
    """Megatron's own IndexedDatasetBuilder, fed the same documents the way preprocess_data.py
    does (eod appended to non-empty documents, an empty document added with no sequence), writes
    the same bytes; and Megatron's IndexedDataset reads ours."""
    indexed = pytest.importorskip("megatron.core.datasets.indexed_dataset", reason="megatron-core is not installed")
    torch = pytest.importorskip("torch")
    source = write_docs(tmp_path)
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--append-eod", str(source),
                 str(tmp_path / "ours.bin")]) == 0
    eos = Tokenizer.from_model_file(MODEL).eos_id
    vocab = len(Tokenizer.from_model_file(MODEL))
    dtype = indexed.DType.optimal_dtype(vocab)
    builder = indexed.IndexedDatasetBuilder(str(tmp_path / "theirs.bin"), dtype=dtype)
    for row in with_eod(expected_ids(), eos):
        builder.add_document(torch.tensor(row, dtype=torch.int64), [len(row)] if row else [])
    builder.finalize(str(tmp_path / "theirs.idx"))
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == (tmp_path / f"theirs{suffix}").read_bytes(), suffix
    dataset = indexed.IndexedDataset(str(tmp_path / "ours"))
    assert [dataset[i].tolist() for i in range(len(dataset))] == [r for r in with_eod(expected_ids(), eos) if r]
    assert dataset.document_indices.tolist() == [0, 1, 1, 2, 3, 4]


def test_tokens_longer_than_the_output_buffer(tmp_path, monkeypatch):
    # the tokens are narrowed into .bin's buffer a buffer's worth at a time; an id that does not
    # fit is found in any piece
    import gpu_text.outputs.direct_file as direct_file

    monkeypatch.setattr(direct_file.DirectFile.__init__, "__defaults__", (direct_file.BLOCK,))
    rng = np.random.default_rng(5)
    values = rng.integers(0, 1000, 3 * direct_file.BLOCK + 123).astype(np.int32)
    offsets = np.array([0, 5, 5, values.size - 7, values.size])
    writer = MegatronWriter(str(tmp_path / "t.bin"), str(tmp_path / "t.idx"), vocab_size=1000)
    writer.write(RaggedArray(values, offsets), None, None)
    assert writer.close() == 4
    assert np.array_equal(np.fromfile(tmp_path / "t.bin", "<u2"), values)
    assert [d.tolist() for d in read_megatron(tmp_path / "t").documents()] == RaggedArray(values, offsets).to_pylist()
    values[2 * direct_file.BLOCK] = 1000
    writer = MegatronWriter(str(tmp_path / "u.bin"), str(tmp_path / "u.idx"), vocab_size=1000)
    with pytest.raises(ValueError, match="token id 1000 does not fit"):
        writer.write(RaggedArray(values, offsets), None, None)
    writer.discard()
