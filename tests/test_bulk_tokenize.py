"""gpu-text tokenize: .txt/.jsonl/.parquet in, Parquet or .npy out, nothing dropped or reordered."""
from __future__ import annotations

import json

import numpy as np

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.conftest import require

DOCS = ["In the beginning God created the heaven and the earth.", "", "满纸荒唐言，一把辛酸泪。", "  spaced   out  ",
        "x" * 5000]


def expected_ids() -> list[list[int]]:
    return Tokenizer.from_model_file(MODEL).encode(DOCS, backend="cpu").ids.to_pylist()


def test_txt_to_parquet_with_offsets(tmp_path):
    pq = require("pyarrow.parquet")
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    out = tmp_path / "ids.parquet"
    assert main(["tokenize", "--model", str(MODEL), "--offsets", "--chunk-mb", "1", "--backend", "cpu", str(source),
                 str(out)]) == 0
    table = pq.read_table(out)
    assert table.column("ids").to_pylist() == expected_ids()
    starts, ends = table.column("starts").to_pylist(), table.column("ends").to_pylist()
    raw = [d.encode() for d in DOCS]
    # every token's span lies inside its document, in order
    for doc, s, e in zip(raw, starts, ends):
        assert all(0 <= a <= b <= len(doc) for a, b in zip(s, e)) and s == sorted(s)


def test_jsonl_and_parquet_inputs_to_npy(tmp_path):
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps({"body": d, "n": i}) + "\n" for i, d in enumerate(DOCS)), encoding="utf-8")
    parquet = tmp_path / "docs.parquet"
    pq.write_table(pa.table({"body": DOCS}), parquet)
    out = tmp_path / "ids.npy"
    assert main(["tokenize", "--model", str(MODEL), "--field", "body", "--backend", "cpu", str(jsonl), str(parquet),
                 str(out)]) == 0
    ids = np.load(tmp_path / "ids.ids.npy")
    offsets = np.load(tmp_path / "ids.offsets.npy")
    assert offsets.size == 2 * len(DOCS) + 1
    rows = [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    assert rows == expected_ids() * 2


def test_missing_field_is_a_clear_error(tmp_path, capsys):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text('{"text": "a"}\n', encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--field", "body", str(jsonl), str(tmp_path / "o.parquet")]) == 2
    assert "no field 'body'" in capsys.readouterr().err


def test_compressed_jsonl_and_stdin_inputs(tmp_path, monkeypatch):
    import gzip
    import io
    import sys

    pq = require("pyarrow.parquet")
    jsonl = tmp_path / "docs.JSONL.gz"
    jsonl.write_bytes(gzip.compress("".join(json.dumps({"text": d}) + "\n" for d in DOCS).encode("utf-8")))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\r\n".join(DOCS).encode("utf-8"))))
    out = tmp_path / "ids.parquet"
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(jsonl), "-", str(out)]) == 0
    assert pq.read_table(out).column("ids").to_pylist() == expected_ids() * 2


def test_job_statistics_beside_the_output(tmp_path):
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    out = tmp_path / "ids.parquet"
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(source), str(out)]) == 0
    stats = json.loads((tmp_path / "ids.parquet.stats.json").read_text())
    lengths = [len(row) for row in expected_ids()]
    text_bytes = sum(len(d.encode()) for d in DOCS)
    assert stats["documents"] == len(DOCS) and stats["empty_documents"] == 1 and stats["tokens"] == sum(lengths)
    assert stats["bytes"] == source.stat().st_size and stats["text_bytes"] == text_bytes
    assert stats["tokens_per_byte"] == round(sum(lengths) / text_bytes, 6)
    assert stats["longest_document"] == {"tokens": max(lengths), "file": str(source), "document": 5}
    assert stats["seconds"] >= 0 and stats["format"] == "parquet" and stats["rows"] == len(DOCS)
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--no-stats", str(source),
                 str(tmp_path / "more.npy")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt", "ids.parquet", "ids.parquet.stats.json",
                                                          "more.ids.npy", "more.offsets.npy"]


def test_the_output_format_may_be_named(tmp_path):
    pq = require("pyarrow.parquet")
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--output-format", "parquet", str(source),
                 str(tmp_path / "ids.tokens")]) == 0
    assert pq.read_table(tmp_path / "ids.tokens").column("ids").to_pylist() == expected_ids()
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--output-format", "npy", str(source),
                 str(tmp_path / "flat")]) == 0
    offsets = np.load(tmp_path / "flat.offsets.npy")
    assert offsets.size == len(DOCS) + 1 and np.load(tmp_path / "flat.ids.npy").size == offsets[-1]


def test_globs_and_directories_are_inputs_in_sorted_order(tmp_path, capsys):
    pq = require("pyarrow.parquet")
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "b.txt").write_text("\n".join(DOCS[2:]) + "\n", encoding="utf-8")
    (tmp_path / "in" / "sub" / "a.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in DOCS[:2]),
                                                      encoding="utf-8")
    (tmp_path / "in" / "README.md").write_text("not a document file: left out\n")
    out = tmp_path / "ids.parquet"
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(tmp_path / "in"), str(out)]) == 0
    # the directory's document files sorted by path: sub/a.jsonl sorts after b.txt
    assert pq.read_table(out).column("ids").to_pylist() == expected_ids()[2:] + expected_ids()[:2]
    assert main(["tokenize", "--model", str(MODEL), "--backend", "cpu", str(tmp_path / "in" / "**" / "*.jsonl"),
                 str(tmp_path / "in" / "*.txt"), str(out)]) == 0
    assert pq.read_table(out).column("ids").to_pylist() == expected_ids()
    assert main(["tokenize", "--model", str(MODEL), str(tmp_path / "in" / "*.csv"), str(out)]) == 2
    assert "no file matches this pattern" in capsys.readouterr().err
    assert main(["tokenize", "--model", str(MODEL), str(tmp_path / "in" / "b.txt")]) == 2
    assert "give the inputs and then the output (IN... OUT)" in capsys.readouterr().err
