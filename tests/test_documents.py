"""The one document reader: every format and compression, stdin, bounded chunks, exact document
counts, byte progress and clear errors."""
from __future__ import annotations

import bz2
import gzip
import io
import json
import sys

import pytest

from gpu_text.documents import input_format, read_documents, total_bytes
from gpu_text.textio import iter_line_chunks, lines_to_batch

# U+2028, U+2029, U+0085, form feed, vertical tab and a lone CR all stay inside their document
DOCS = ["plain", "", "line\u2028separator", "para\u2029graph", "next\u0085line", "form\x0cfeed", "v\x0btab",
        "lone\rcr", "中文，标点。", "  spaced  ", "x" * 300, "last"]


class Bar:
    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int) -> None:
        assert n >= 0
        self.n += n


def txt_bytes(newline: str = "\n", final_newline: bool = False) -> bytes:
    return (newline.join(DOCS) + (newline if final_newline else "")).encode("utf-8")


def jsonl_bytes() -> bytes:
    # blank lines between records are skipped, CRLF records are fine
    records = [json.dumps({"id": i, "body": d}) for i, d in enumerate(DOCS)]
    return ("\n".join(records[:3]) + "\n\n" + "\r\n".join(records[3:]) + "\n").encode("utf-8")


def compress(data: bytes, kind: str) -> bytes:
    if kind == "gzip":
        return gzip.compress(data)
    if kind == "bz2":
        return bz2.compress(data)
    if kind == "zstd":
        pa = pytest.importorskip("pyarrow")
        if not pa.Codec.is_available("zstd"):
            pytest.skip("pyarrow without zstd")
        return pa.Codec("zstd").compress(data, asbytes=True)
    return data


def read_all(paths, **kwargs) -> tuple[list[str], int, list]:
    bar = Bar()
    batches = list(read_documents(paths, progress=bar, **kwargs))
    return [d for b in batches for d in b.to_pylist(errors="strict")], bar.n, batches


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("final_newline", [False, True])
def test_txt_lines_are_documents(tmp_path, newline, final_newline):
    path = tmp_path / "docs.txt"
    path.write_bytes(txt_bytes(newline, final_newline))
    docs, progress, _ = read_all(path, chunk_bytes=40)
    assert docs == DOCS
    assert progress == path.stat().st_size == total_bytes([path])


def test_empty_lines_and_files_count_exactly(tmp_path):
    path = tmp_path / "e.txt"
    path.write_bytes(b"\n\r\n\n")
    assert read_all(path)[0] == ["", "", ""]
    path.write_bytes(b"")
    assert read_all(path)[0] == []
    path.write_bytes(b"no newline")
    assert read_all(path)[0] == ["no newline"]


@pytest.mark.parametrize("kind", ["none", "gzip", "bz2", "zstd"])
@pytest.mark.parametrize("fmt", ["txt", "jsonl"])
def test_compressed_inputs_by_magic_bytes(tmp_path, kind, fmt):
    raw = txt_bytes("\r\n") if fmt == "txt" else jsonl_bytes()
    suffix = {"none": "", "gzip": ".gz", "bz2": ".bz2", "zstd": ".zst"}[kind]
    path = tmp_path / f"docs.{fmt.upper()}{suffix.upper()}"  # upper-case suffixes too
    path.write_bytes(compress(raw, kind))
    docs, progress, _ = read_all(path, field="body", chunk_bytes=64)
    assert docs == DOCS
    assert progress == path.stat().st_size  # the compressed bytes: real progress


def test_compression_is_found_by_content_not_name(tmp_path):
    path = tmp_path / "docs.jsonl"  # gzip data without a .gz suffix
    path.write_bytes(gzip.compress(jsonl_bytes()))
    assert read_all(path, field="body")[0] == DOCS
    plain = tmp_path / "plain.txt.gz"  # a .gz name over plain text
    plain.write_bytes(txt_bytes())
    assert read_all(plain)[0] == DOCS


def test_input_format_from_the_name():
    assert [input_format(p) for p in ["a.JSONL.GZ", "a.jsonl.zst", "a.Parquet", "a.tsv", "a", "a.txt.bz2"]] == [
        "jsonl", "jsonl", "parquet", "txt", "txt", "txt"]


def test_parquet_zero_copy_batches_and_progress(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "docs.PARQUET"
    pq.write_table(pa.table({"n": list(range(len(DOCS) * 20)), "body": DOCS * 20}), path, row_group_size=16)
    docs, progress, batches = read_all(path, field="body", chunk_bytes=200)
    assert docs == DOCS * 20 and len(batches) > 1
    assert progress == path.stat().st_size
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"text": ["a", None, "b"]}), nulls)
    assert read_all(nulls)[0] == ["a", "", "b"]


def test_mixed_inputs_in_order(tmp_path):
    txt = tmp_path / "a.txt"
    txt.write_bytes(txt_bytes())
    jsonl = tmp_path / "b.jsonl.gz"
    jsonl.write_bytes(gzip.compress(jsonl_bytes()))
    docs, progress, _ = read_all([txt, jsonl], field="body")
    assert docs == DOCS * 2
    assert progress == total_bytes([txt, jsonl]) == txt.stat().st_size + jsonl.stat().st_size


@pytest.mark.parametrize("compressed", [False, True])
def test_stdin(monkeypatch, compressed):
    data = txt_bytes("\r\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(data) if compressed else data)))
    docs, progress, _ = read_all("-", chunk_bytes=50)
    assert docs == DOCS
    assert total_bytes(["-"]) == 0 and progress > 0


def test_chunks_are_bounded(tmp_path):
    lines = [f"document {i} " + "y" * (i % 37) for i in range(2000)]
    path = tmp_path / "many.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    batches = list(read_documents(path, chunk_bytes=1000))
    assert len(batches) > 50
    assert all(b.nbytes + len(b) <= 1000 for b in batches)  # the text plus its newlines
    assert [d for b in batches for d in b.to_pylist()] == lines
    jsonl = tmp_path / "many.jsonl"
    jsonl.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf-8")
    batches = list(read_documents(jsonl, chunk_bytes=1000))
    assert len(batches) > 50 and all(b.nbytes <= 1000 for b in batches)
    assert [d for b in batches for d in b.to_pylist()] == lines


def test_a_line_longer_than_a_chunk_comes_whole():
    chunks = list(iter_line_chunks(io.BytesIO(b"ab\n" + b"z" * 50 + b"\ncd"), chunk_bytes=8))
    assert chunks == [b"ab\n", b"z" * 50 + b"\n", b"cd"]
    assert lines_to_batch(b"".join(chunks)).to_pylist() == ["ab", "z" * 50, "cd"]


def test_jsonl_nulls_and_the_line_by_line_parser_agree(tmp_path, monkeypatch):
    path = tmp_path / "n.jsonl"
    path.write_bytes(jsonl_bytes() + b'{"body": null}\n')
    with_arrow = read_all(path, field="body")[0]
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # the reader without pyarrow installed
    monkeypatch.setitem(sys.modules, "pyarrow.json", None)
    assert read_all(path, field="body")[0] == with_arrow == DOCS + [""]


@pytest.mark.parametrize("content, message", [
    ('{"text": "a"}\n\n{"other": 1}\n', r"bad\.jsonl:3: no field 'text'"),
    ('{"text": "a"}\n{"text": 5}\n', r"bad\.jsonl:2: field 'text' is int, not a string"),
    ('{"text": "a"}\n{"text": ["a"]}\n', r"bad\.jsonl:2: field 'text' is list, not a string"),
    ('{"text": "a"}\n[1, 2]\n', r"bad\.jsonl:2: not a JSON object"),
    ('{"text": "a"} {"text": "b"}\n', r"bad\.jsonl:1: invalid JSON"),
    ('{"text": "a"\n', r"bad\.jsonl:1: invalid JSON"),
])
def test_jsonl_errors_name_file_field_and_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        list(read_documents(path))


def test_jsonl_error_line_numbers_count_across_chunks(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    path.write_bytes(gzip.compress(("".join(json.dumps({"text": str(i)}) + "\n" for i in range(500))
                                    + '{"txt": "x"}\n').encode()))
    with pytest.raises(ValueError, match=r"bad\.jsonl\.gz:501: no field 'text'"):
        list(read_documents(path, chunk_bytes=100))


def test_parquet_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"n": [1, 2], "body": ["a", "b"]}), path)
    with pytest.raises(ValueError, match=r"t\.parquet: no field 'text'"):
        list(read_documents(path))
    with pytest.raises(ValueError, match=r"t\.parquet: field 'n' is int64, not a string column"):
        list(read_documents(path, field="n"))
    packed = tmp_path / "t.parquet.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(ValueError, match="not a Parquet file"):
        list(read_documents(packed, field="body"))


def test_zstd_without_a_codec_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "d.txt.zst"
    path.write_bytes(compress(b"a\n", "zstd"))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # neither pyarrow nor zstandard importable
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ValueError, match=r"d\.txt\.zst is zstd-compressed: reading it needs pyarrow"):
        list(read_documents(path))


def test_missing_file_and_bad_chunk_size(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(read_documents(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="chunk_bytes"):
        list(read_documents(tmp_path / "missing.txt", chunk_bytes=0))


@pytest.mark.parametrize("kind", ["gzip", "bz2", "zstd"])
def test_truncated_compressed_input_names_the_file(tmp_path, kind):
    blob = compress(txt_bytes() * 100, kind)
    path = tmp_path / "cut.txt"
    path.write_bytes(blob[:len(blob) // 2])
    with pytest.raises(ValueError, match=r"cut\.txt: damaged compressed data"):
        list(read_documents(path))
