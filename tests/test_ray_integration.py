"""Ray Data (gpu_text.integrations.ray and its example) on a local Ray instance, CPU backend: the
ids match ``gpu-text tokenize`` on the same Parquet shards, no document is lost, duplicated or
(where order is kept) moved, empty, null and non-ASCII documents included; the Megatron shards
read back with gpu_text.outputs.megatron_reader. Ray starts once for the module (it is slow to
start); the tests that need no Ray session run without one."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpu_text.cli import main as cli
from gpu_text.demo import MODEL, SAMPLES
from gpu_text.integrations.ray import MANIFEST, TokenizeBatch, ids_column, tokenize_dataset, write_megatron_shard
from gpu_text.integrations.ray_example import main as example
from gpu_text.outputs.megatron_reader import read_megatron
from gpu_text.ragged import RaggedArray
from gpu_text.tokenizer.tokenizer import Tokenizer

ray = pytest.importorskip("ray", reason="Ray Data is not installed (pip install 'ray[data]'): "
                                        "gpu_text.integrations.ray is not tested here")
pytest.importorskip("ray.data", reason="ray is installed without Ray Data (pip install 'ray[data]')")

# documents a tokenizer can get wrong: empty, null (an empty document, as for the CLI), spaces only,
# Chinese, emoji and combining marks, a long mixed one
SPECIAL = ["", None, "   ", "你好，世界", "😀 emoji 🎉 and ünïcödé", "e\u0301 combining", "A" * 3000 + " 红楼梦 " * 50]


def _documents() -> list[str | None]:
    english = [line for line in (SAMPLES / "en-kjv.txt").read_text(encoding="utf-8").splitlines() if line][:150]
    chinese = [line for line in (SAMPLES / "zh-hongloumeng.txt").read_text(encoding="utf-8").splitlines() if line][:90]
    docs: list[str | None] = []
    for i, (en, zh) in enumerate(zip(english, chinese * 2)):
        docs += [en, zh] if i % 2 else [zh, en]
        if i % 25 == 0:
            docs += SPECIAL
    return docs


DOCS = _documents()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """DOCS in four Parquet shards (one in a subdirectory), ``doc_id`` numbering them in the
    order a reader of the sorted paths meets them; and the CLI's ids, in that order."""
    root = tmp_path_factory.mktemp("ray-corpus")
    shards = [root / "in" / "a.parquet", root / "in" / "b.parquet", root / "in" / "c" / "d.parquet",
              root / "in" / "e.parquet"]
    bounds = np.linspace(0, len(DOCS), len(shards) + 1).astype(int)
    for shard, start, stop in zip(shards, bounds[:-1], bounds[1:]):
        shard.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"doc_id": pa.array(range(start, stop), pa.int64()),
                                 "text": pa.array(DOCS[start:stop], pa.string())}), shard, row_group_size=40)
    (root / "in" / "_SUCCESS").write_text("")  # a marker file: no input
    out = root / "cli.parquet"
    assert cli(["tokenize", "--model", str(MODEL), "--backend", "cpu", "--no-stats", *map(str, shards), str(out)]) == 0
    expected = pq.read_table(out)["ids"].to_pylist()
    assert len(expected) == len(DOCS)
    return root / "in", expected


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray instance (2 CPUs) for every test of the module that runs a pipeline."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def _special_rows(ids_by_doc: list[list[int]]) -> dict[str | None, list[int]]:
    return {DOCS[i]: ids_by_doc[i] for i in range(len(DOCS)) if DOCS[i] in SPECIAL}


def test_corpus_has_the_hard_documents(corpus):
    _, expected = corpus
    special = _special_rows(expected)
    assert special[""] == [] and special[None] == []
    assert all(special[text] for text in SPECIAL if text and text.strip())  # non-ASCII is tokenized, not dropped
    assert DOCS.count("") == DOCS.count(None) == len([i for i in range(0, 150, 25)])


# ------------------------------------------------------------------------------ through Ray
def test_example_parquet_any_order_two_actors_same_ids_as_the_cli(ray_session, corpus, tmp_path):
    in_dir, expected = corpus
    out = tmp_path / "tokenized"
    assert example([str(in_dir), str(out), "--model", str(MODEL), "--backend", "cpu", "--any-order",
                    "--concurrency", "2", "--actor-cpus", "0.5", "--batch-size", "37", "--rows-per-shard", "150"]) == 0
    table = pq.read_table(out)  # Arrow's dataset discovery skips _manifest.json
    assert table.schema.field("ids").type == pa.list_(pa.int32())
    table = table.sort_by("doc_id")  # Ray may have reordered the rows: match them up by id
    assert table["doc_id"].to_pylist() == list(range(len(DOCS)))  # none lost, none twice
    assert table["text"].to_pylist() == DOCS  # the other columns kept, nulls as nulls
    assert table["ids"].to_pylist() == expected
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["documents"] == len(DOCS) == sum(f["documents"] for f in manifest["files"])
    assert len(manifest["files"]) > 1 and all(0 < f["documents"] <= 150 for f in manifest["files"])
    assert sorted(f["file"] for f in manifest["files"]) == sorted(p for p in os.listdir(out) if p.endswith(".parquet"))
    assert os.listdir(tmp_path) == ["tokenized"]  # the temporary directory was renamed, nothing left beside


def test_example_megatron_shards_in_input_order_with_eod(ray_session, corpus, tmp_path):
    in_dir, expected = corpus
    out = tmp_path / "megatron"
    assert example([str(in_dir), str(out), "--model", str(MODEL), "--backend", "cpu", "--output-format", "megatron",
                    "--append-eod", "--concurrency", "1", "--batch-size", "50", "--rows-per-shard", "100"]) == 0
    manifest = json.loads((out / MANIFEST).read_text())
    shards = [shard["prefix"] for shard in manifest["shards"]]
    assert len(shards) > 1  # several shards, so the order across them is checked too
    assert all(0 < shard["documents"] <= 100 for shard in manifest["shards"])  # --rows-per-shard
    assert sorted(os.listdir(out)) == sorted([MANIFEST] + [f"{s}.{ext}" for s in shards for ext in ("bin", "idx")])
    eos = Tokenizer.from_model_file(MODEL).eos_id
    documents = []
    for shard in manifest["shards"]:
        data = read_megatron(out / shard["prefix"])
        assert data.dtype == np.uint16  # a 4k vocabulary: Megatron's uint16 tokens
        shard_documents = [d.tolist() for d in data.documents()]
        assert len(shard_documents) == shard["documents"]
        assert sum(map(len, shard_documents)) == shard["tokens"]
        documents += shard_documents
    assert documents == [row + [eos] if row else [] for row in expected]  # every document, in input order
    assert manifest["documents"] == len(DOCS) and manifest["eod_id"] == eos


def _numba_threads_in_a_worker() -> tuple[int, float | None]:
    import numba

    from gpu_text.integrations.ray import reserved_cpus

    TokenizeBatch(MODEL, backend="cpu")
    return numba.get_num_threads(), reserved_cpus()


def test_actors_run_as_many_numba_threads_as_ray_reserved_cpus(ray_session):
    import numba

    work = ray.remote(_numba_threads_in_a_worker)
    every_core = numba.config.NUMBA_NUM_THREADS
    assert ray.get(work.options(num_cpus=2).remote()) == (min(2, every_core), 2.0)
    assert ray.get(work.options(num_cpus=0.5).remote()) == (1, 0.5)  # a fraction of a CPU: one thread
    TokenizeBatch(MODEL, backend="cpu")  # the driver: no reservation, Numba left as it is
    assert numba.get_num_threads() == every_core


def test_tokenize_dataset_refuses_a_bad_actor_count(ray_session, corpus):
    in_dir, _ = corpus
    ds = ray.data.read_parquet(str(in_dir))  # lazy: nothing runs
    for bad in (0, -1, 1.5, True, (2, 0, 1)):
        with pytest.raises(ValueError, match="concurrency must be a positive number of actors"):
            tokenize_dataset(ds, MODEL, backend="cpu", concurrency=bad)


# --------------------------------------------------------------- what each actor does, without Ray
def test_tokenize_batch_matches_the_cli_on_sliced_and_chunked_batches(corpus):
    in_dir, expected = corpus
    table = pa.concat_tables(pq.read_table(path) for path in sorted(in_dir.rglob("*.parquet"), key=str))
    assert table["text"].num_chunks > 1
    tokenize = TokenizeBatch(str(MODEL), backend="cpu")
    out = tokenize(table)
    assert out.column_names == ["doc_id", "text", "ids"] and out["ids"].to_pylist() == expected
    window = tokenize(table.slice(7, 60))  # a batch Ray cut out of a block: offset into the buffers
    assert window["ids"].to_pylist() == expected[7:67]
    large = table.cast(pa.schema([("doc_id", pa.int64()), ("text", pa.large_string())]))
    assert tokenize(large)["ids"].to_pylist() == expected
    assert tokenize(table.slice(0, 0))["ids"].to_pylist() == []


def test_tokenize_batch_takes_a_tokenizer_and_replaces_an_existing_column():
    tokenizer = Tokenizer.from_model_file(MODEL)
    out = TokenizeBatch(tokenizer, output_column="ids", backend="cpu", add_bos=True)(
        pa.table({"ids": [1, 2], "text": ["In the beginning", "红楼梦"]}))
    assert out.column_names == ["ids", "text"]
    assert out["ids"].to_pylist() == [[tokenizer.bos_id] + row for row in
                                      tokenizer.encode(["In the beginning", "红楼梦"], backend="cpu").ids.to_pylist()]


def test_tokenize_batch_bad_batches_are_clear_errors():
    tokenize = TokenizeBatch(MODEL, backend="cpu")
    with pytest.raises(TypeError, match="batch_format='pyarrow'"):
        tokenize({"text": np.array(["a"])})
    with pytest.raises(KeyError, match="no column 'text'"):
        tokenize(pa.table({"body": ["a"]}))
    with pytest.raises(TypeError, match="column 'text': expected a pyarrow string or binary array, got type int64"):
        tokenize(pa.table({"text": [1, 2]}))
    with pytest.raises(ValueError, match="unknown backend|backend"):
        TokenizeBatch(MODEL, backend="tpu")


def test_ids_column_shares_the_values_buffer():
    values = np.arange(10, dtype=np.int32)
    ids = RaggedArray(values, np.array([0, 4, 4, 10]))
    column = ids_column(ids)
    assert column.type == pa.list_(pa.int32()) and column.num_chunks == 1
    assert column.chunk(0).values.buffers()[1].address == values.ctypes.data  # no copy of the ids
    assert column.to_pylist() == [[0, 1, 2, 3], [], [4, 5, 6, 7, 8, 9]]
    assert ids_column(RaggedArray(np.zeros(0, np.int32), np.array([0]))).to_pylist() == []


def test_megatron_shard_from_a_sliced_multi_chunk_column(tmp_path):
    rows = [[5, 6], [], [7], [8, 9, 10], [11]]
    column = pa.chunked_array([pa.array(rows[:2], pa.list_(pa.int32())),
                               pa.array([[99]] + rows[2:], pa.list_(pa.int32())).slice(1)])  # offset != 0
    summary = write_megatron_shard(pa.table({"ids": column}), str(tmp_path / "s"), vocab_size=4259)
    assert summary == {"prefix": "s", "documents": 5, "tokens": 7}
    assert [d.tolist() for d in read_megatron(tmp_path / "s").documents()] == rows
    assert sorted(os.listdir(tmp_path)) == ["s.bin", "s.idx"]


def test_megatron_shard_bad_columns_leave_no_files(tmp_path):
    prefix = str(tmp_path / "s")
    with pytest.raises(TypeError, match="lists of integer ids"):
        write_megatron_shard(pa.table({"ids": ["not ids"]}), prefix, vocab_size=100)
    with pytest.raises(ValueError, match="1 null rows"):
        write_megatron_shard(pa.table({"ids": pa.array([[1], None], pa.list_(pa.int32()))}), prefix, vocab_size=100)
    with pytest.raises(ValueError, match="does not fit"):
        write_megatron_shard(pa.table({"ids": [[1, 500]]}), prefix, vocab_size=100)
    with pytest.raises(KeyError, match="no column 'ids'"):
        write_megatron_shard(pa.table({"x": [[1]]}), prefix, vocab_size=100)
    assert os.listdir(tmp_path) == []


def _example_error(capsys, *argv: str) -> str:
    assert example(list(argv)) == 2
    return capsys.readouterr().err


def test_example_bad_inputs_fail_before_ray_starts(capsys, corpus, tmp_path):
    in_dir, _ = corpus
    model = str(MODEL)
    assert "No such file or directory" in _example_error(capsys, str(tmp_path / "nope"), str(tmp_path / "o"),
                                                         "--model", model)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert "exists and is not empty" in _example_error(capsys, str(in_dir), str(tmp_path / "full"), "--model", model)
    assert "inside the input directory" in _example_error(capsys, str(in_dir), str(in_dir / "out"), "--model", model)
    assert "--append-eod is Megatron's option" in _example_error(capsys, str(in_dir), str(tmp_path / "o"),
                                                                 "--model", model, "--append-eod")
    (tmp_path / "bad.txt").write_text("not a model")
    assert "bad.txt: malformed SentencePiece model" in _example_error(capsys, str(in_dir), str(tmp_path / "o"),
                                                                 "--model", str(tmp_path / "bad.txt"))
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "x.parquet").write_bytes(b"PAR1 truncated")
    assert "x.parquet: not a readable Parquet file" in _example_error(capsys, str(damaged), str(tmp_path / "o"),
                                                                      "--model", model)
    assert not (tmp_path / "o").exists()
    assert "a cluster (--address) has its own CPUs" in _example_error(capsys, str(in_dir), str(tmp_path / "o"),
                                                                      "--model", model, "--address", "auto",
                                                                      "--num-cpus", "2")
    assert not (tmp_path / "o").exists()


def test_without_ray_the_error_says_how_to_install_it(monkeypatch, capsys, corpus, tmp_path):
    in_dir, _ = corpus
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if Ray were not installed
    error = _example_error(capsys, str(in_dir), str(tmp_path / "o"), "--model", str(MODEL))
    assert 'Ray Data is not installed: pip install "ray[data]"' in error
    assert os.listdir(tmp_path) == []
