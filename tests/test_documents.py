"""The one document reader: every format and compression, stdin, bounded chunks, exact document
counts, byte progress and clear errors."""
from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import sys
from pathlib import Path

import pytest

from gpu_text.documents import input_format, iter_documents, name_format, read_documents, total_bytes
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


def test_format_from_the_name():
    names = ["a.JSONL.GZ", "a.jsonl.zst", "a.Parquet", "a.tsv", "a", "a.txt.bz2", "a.json", "a.ndjson.gz"]
    assert [name_format(p) for p in names] == ["jsonl", "jsonl", "parquet", None, None, "txt", "json", "jsonl"]


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


# ----------------------------------------------------------------- content detection, BOM, limits

@pytest.mark.parametrize("kind", ["none", "gzip", "bz2"])
def test_byte_order_mark_is_dropped_in_every_text_format(tmp_path, kind, monkeypatch):
    bom = b"\xef\xbb\xbf"
    cases = {"a.txt": bom + b"first\nsecond\n", "a.jsonl": bom + b'{"text": "first"}\n{"text": "second"}\n',
             "a.json": bom + b' ["first", "second"]', "sniffed": bom + b'{"text": "first"}\n{"text": "second"}\n'}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(compress(content, kind))
        assert read_all(path, chunk_bytes=2)[0] == ["first", "second"], name
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(compress(bom + b"first\r\nsecond", kind))))
    assert read_all("-")[0] == ["first", "second"]
    (tmp_path / "only.txt").write_bytes(bom)
    assert read_all(tmp_path / "only.txt")[0] == []
    (tmp_path / "inner.txt").write_bytes(b"a\n" + bom + b"b\n")  # only the file's first bytes are a mark
    assert read_all(tmp_path / "inner.txt")[0] == ["a", "\ufeffb"]


def test_formats_by_content_then_name(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = b'{"text": "a"}\n{"text": "b"}\n'
    files = {"records": records, "records.log.gz": gzip.compress(records), "notes.md": b"{not json\nb\n",
             "list.txt": b'["a", "b"]\n', "object.txt": records, "array.JSON": b'\n [ "a" , {"text": "b"} ]\n',
             "lines.json": records, "blank": b"", "brace": b"{}\n"}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    pq.write_table(pa.table({"text": ["a", "b"]}), tmp_path / "table.jsonl")
    formats = {name: input_format(tmp_path / name) for name in [*files, "table.jsonl"]}
    assert formats == {"records": "jsonl", "records.log.gz": "jsonl", "notes.md": "txt", "list.txt": "txt",
                       "object.txt": "txt", "array.JSON": "json", "lines.json": "json", "blank": "txt",
                       "brace": "jsonl", "table.jsonl": "parquet"}
    for name in ["records", "records.log.gz", "array.JSON", "lines.json", "table.jsonl"]:
        assert read_all(tmp_path / name)[0] == ["a", "b"], name
    assert read_all(tmp_path / "notes.md")[0] == ["{not json", "b"]
    assert read_all(tmp_path / "object.txt", format="jsonl")[0] == ["a", "b"]
    assert read_all(tmp_path / "records", format="txt")[0] == ['{"text": "a"}', '{"text": "b"}']
    with pytest.raises(ValueError, match=r"object\.txt is not a Parquet file"):
        list(read_documents(tmp_path / "object.txt", format="parquet"))
    with pytest.raises(ValueError, match="format must be one of"):
        list(read_documents(tmp_path / "records", format="xml"))


def test_json_arrays_stream_element_by_element(tmp_path):
    docs = [f"document {i} " + "z" * (i % 50) for i in range(3000)]
    values = [d if i % 3 else {"body": d, "n": i} for i, d in enumerate(docs)] + [None, {"body": None}]
    path = tmp_path / "docs.json"
    path.write_text(json.dumps(values, indent=1), encoding="utf-8")
    docs_read, progress, batches = read_all(path, field="body", chunk_bytes=1000)
    assert docs_read == docs + ["", ""]
    assert len(batches) > 50 and progress == path.stat().st_size
    long = tmp_path / "long.json"
    long.write_text(json.dumps(["x" * 100_000, 12345678901234567890 and "y"]), encoding="utf-8")
    assert read_all(long, chunk_bytes=16)[0] == ["x" * 100_000, "y"]
    empty = tmp_path / "empty.json"
    empty.write_text(" [ ] ", encoding="utf-8")
    assert read_all(empty)[0] == []


@pytest.mark.parametrize("content, message", [
    ('["a", 5]', r"bad\.json: element 2 of the JSON array: int, not a string"),
    ('["a", {"other": "b"}]', r"element 2 of the JSON array: no field 'text'"),
    ('[{"text": 1.5}]', r"element 1 of the JSON array: float"),
    ('["a" "b"]', r"expected ',' in the JSON array"),
    ('["a", ', r"element 2 of the JSON array: invalid JSON"),
    ('["a"] ["b"]', r"data after the end of the JSON array"),
    ('["a", tru]', r"element 2 of the JSON array: invalid JSON"),
    ('["a", 12', r"element 2 of the JSON array: invalid JSON|int, not a string"),
])
def test_json_array_errors_name_the_element(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        list(read_documents(path, chunk_bytes=2))


def test_json_array_invalid_utf8_is_named(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'["a", "\xff"]')
    with pytest.raises(ValueError, match=r"bad\.json: not UTF-8"):
        list(read_documents(path))


@pytest.mark.parametrize("kind", ["none", "gzip"])
def test_documents_longer_than_the_limit_are_named(tmp_path, kind):
    limit = 100
    for name, content, where in [
        ("t.txt", b"ok\n" * 50 + b"y" * 101 + b"\nok\n", "t.txt:51"),
        ("t2.txt", b"ok\r\n" + b"y" * 101, "t2.txt:2"),  # an unterminated last line
        ("t.jsonl", b'{"text": "ok"}\n' * 3 + b'{"text": "' + b"y" * 200 + b'"}\n', "t.jsonl:4"),
        ("t.json", b'["ok", "' + b"y" * 200 + b'"]', "t.json: element 2 of the JSON array"),
    ]:
        path = tmp_path / name
        path.write_bytes(compress(content, kind))
        for chunk in (7, 1 << 20):  # the long line spread over reads, or inside one chunk
            with pytest.raises(ValueError, match=f"{where}: document longer than 100 bytes"):
                list(read_documents(path, chunk_bytes=chunk, max_document_bytes=limit))
    exact = tmp_path / "exact.txt"  # exactly the limit, CRLF or not, is fine
    exact.write_bytes(b"y" * limit + b"\r\n" + b"z" * limit + b"\n" + b"w" * limit)
    for chunk in (1, 3, 101, 1 << 20):
        assert read_all(exact, chunk_bytes=chunk, max_document_bytes=limit)[0] == ["y" * limit, "z" * limit,
                                                                                      "w" * limit]


def test_parquet_documents_longer_than_the_limit_and_dictionary_columns(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["ok", "y" * 200, "ok"]}), path)
    with pytest.raises(ValueError, match=r"t\.parquet: row 2: document longer than 100 bytes"):
        list(read_documents(path, max_document_bytes=100))
    encoded = tmp_path / "d.parquet"
    pq.write_table(pa.table({"text": pa.array(["a", "b", "a", None]).dictionary_encode()}), encoded)
    assert read_all(encoded)[0] == ["a", "b", "a", ""]
    damaged = tmp_path / "damaged.parquet"
    damaged.write_bytes(path.read_bytes()[:30])
    with pytest.raises(ValueError, match=r"damaged\.parquet"):
        list(read_documents(damaged))


def test_dev_zero_stops_at_the_limit():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    with pytest.raises(ValueError, match="/dev/zero:1: document longer than 65536 bytes"):
        list(read_documents("/dev/zero", max_document_bytes=1 << 16))


def test_document_options_set_defaults_for_a_block(tmp_path):
    from gpu_text.documents import document_options

    path = tmp_path / "r.txt"
    path.write_text('{"text": "' + "a" * 50 + '"}\n', encoding="utf-8")
    with document_options(format="jsonl"):
        assert read_all(path)[0] == ["a" * 50]
        with document_options(max_document_bytes=10), pytest.raises(ValueError, match="longer than 10 bytes"):
            list(read_documents(path))
        assert read_all(path, format="txt")[0] == ['{"text": "' + "a" * 50 + '"}']  # an explicit value wins
    assert read_all(path)[0] == ['{"text": "' + "a" * 50 + '"}']


def test_iter_documents_numbers_documents_per_file(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(f"{i}\n" for i in range(10)), encoding="utf-8")
    b.write_text("x\ny\n", encoding="utf-8")
    located = list(iter_documents([a, b], chunk_bytes=6))
    assert [(Path(d.path).name, d.first, len(d.batch)) for d in located][:2] == [("a.txt", 1, 3), ("a.txt", 4, 3)]
    for d in located:  # every batch's first number is its first line in its file
        lines = (a if d.path == str(a) else b).read_text(encoding="utf-8").splitlines()
        assert d.batch.to_pylist() == lines[d.first - 1:d.first - 1 + len(d.batch)]
    assert sum(len(d.batch) for d in located if d.path == str(b)) == 2
