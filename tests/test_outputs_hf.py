"""gpu-text tokenize → a Hugging Face datasets directory (loaded back with datasets.load_from_disk),
and gpu_text.integrations.hf.batched_encoder under Dataset.map(batched=True)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL
from gpu_text.integrations.hf import batched_encoder
from gpu_text.outputs.hf_datasets import HFDatasetWriter
from gpu_text.ragged import RaggedArray
from gpu_text.tokenizer.tokenizer import Tokenizer
from tests.conftest import require
from tests.test_bulk_tokenize import DOCS, expected_ids


def tokenize(tmp_path, *extra, output="ds", docs=DOCS):
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(docs) + "\n", encoding="utf-8")
    return main(["tokenize", "--model", str(MODEL), "--backend", "cpu", *extra, str(source), f"{tmp_path}/{output}"])


def test_cli_dataset_loads_back_with_the_same_ids(tmp_path):
    datasets = require("datasets")
    assert tokenize(tmp_path, "--output-format", "hf") == 0
    dataset = datasets.load_from_disk(str(tmp_path / "ds"))
    assert dataset.num_rows == len(DOCS)
    assert dataset["input_ids"] == expected_ids()
    assert dataset.features["input_ids"].feature.dtype == "int32"
    stats = json.loads((tmp_path / "ds.stats.json").read_text())
    assert stats["documents"] == len(DOCS) and stats["format"] == "hf" and stats["rows"] == len(DOCS)


def test_offsets_and_a_trailing_slash(tmp_path):
    datasets = require("datasets")
    assert tokenize(tmp_path, "--offsets", output="ds/") == 0  # the slash says: a dataset directory
    dataset = datasets.load_from_disk(str(tmp_path / "ds"))
    encoding = Tokenizer.from_model_file(MODEL).encode(DOCS, backend="cpu", with_offsets=True)
    assert dataset["starts"] == encoding.starts.to_pylist() and dataset["ends"] == encoding.ends.to_pylist()


def test_many_shards_keep_the_order(tmp_path):
    datasets = require("datasets")
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 30, 500)
    rows = RaggedArray(rng.integers(0, 4000, int(lengths.sum())).astype(np.int32),
                       np.concatenate([[0], np.cumsum(lengths)]))
    writer = HFDatasetWriter(str(tmp_path / "sharded"), shard_bytes=2000)
    for a in range(0, 500, 50):
        writer.write(rows.rows(a, a + 50), None, None)
    assert writer.close() == 500
    shards = sorted(p.name for p in (tmp_path / "sharded").glob("data-*.arrow"))
    assert len(shards) == 10 and shards[0] == "data-00000-of-00010.arrow"
    dataset = datasets.load_from_disk(str(tmp_path / "sharded"))
    assert dataset["input_ids"] == rows.to_pylist()
    assert [p.name for p in tmp_path.iterdir()] == ["sharded"]  # no temporary directory left


def test_rerun_replaces_a_dataset_and_is_deterministic(tmp_path):
    datasets = require("datasets")
    assert tokenize(tmp_path, "--output-format", "hf") == 0
    first = (tmp_path / "ds" / "state.json").read_text()
    assert tokenize(tmp_path, "--output-format", "hf", docs=DOCS[:2]) == 0
    assert datasets.load_from_disk(str(tmp_path / "ds"))["input_ids"] == expected_ids()[:2]
    assert tokenize(tmp_path, "--output-format", "hf") == 0
    assert (tmp_path / "ds" / "state.json").read_text() == first  # the fingerprint hashes the ids
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.txt", "ds", "ds.stats.json"]


def test_a_failure_keeps_the_old_dataset_and_other_directories_are_refused(tmp_path, capsys):
    datasets = require("datasets")
    assert tokenize(tmp_path, "--output-format", "hf") == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": 5}\n', encoding="utf-8")
    assert main(["tokenize", "--model", str(MODEL), "--output-format", "hf", str(bad), str(tmp_path / "ds")]) == 2
    assert "bad.jsonl" in capsys.readouterr().err
    assert datasets.load_from_disk(str(tmp_path / "ds"))["input_ids"] == expected_ids()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "docs.txt", "ds", "ds.stats.json"]
    (tmp_path / "plain").mkdir()
    assert main(["tokenize", "--model", str(MODEL), "--output-format", "hf", str(bad), str(tmp_path / "plain")]) == 2
    assert "is not a datasets directory" in capsys.readouterr().err


def test_batched_encoder_under_dataset_map(tmp_path):
    datasets = require("datasets")
    tokenizer = Tokenizer.from_model_file(MODEL)
    dataset = datasets.Dataset.from_dict({"text": DOCS, "n": list(range(len(DOCS)))})
    eos = tokenizer.eos_id
    for returns in ("auto", "numpy", "arrow"):
        mapped = dataset.map(batched_encoder(tokenizer, backend="cpu", returns=returns), batched=True, batch_size=2)
        assert mapped["input_ids"] == expected_ids() and mapped["n"] == list(range(len(DOCS))), returns
    for returns in ("auto", "arrow"):  # an Arrow batch keeps its columns only in a returned table
        arrow = dataset.with_format("arrow").map(batched_encoder(tokenizer, backend="cpu", returns=returns,
                                                                 add_eos=True), batched=True, batch_size=3)
        plain = arrow.with_format(None)
        assert plain["input_ids"] == [row + [eos] for row in expected_ids()] and plain["n"] == list(range(len(DOCS)))
        assert plain.features["input_ids"].feature.dtype == "int32"


def test_batched_encoder_returns_arrays_not_lists():
    pa = require("pyarrow")
    tokenizer = Tokenizer.from_model_file(MODEL)
    table = batched_encoder(tokenizer, backend="cpu", with_offsets=True, returns="arrow")(pa.table({"text": DOCS}))
    assert table.column_names == ["text", "input_ids", "starts", "ends"]
    assert table.schema.field("input_ids").type == pa.list_(pa.int32())
    assert table["input_ids"].to_pylist() == expected_ids()
    assert table.schema.field("starts").type == pa.list_(pa.int64())
    rows = batched_encoder(tokenizer, backend="cpu")({"text": DOCS})  # a dict batch: numpy rows
    assert all(isinstance(r, np.ndarray) and r.dtype == np.int32 for r in rows["input_ids"])
    assert [r.tolist() for r in rows["input_ids"]] == expected_ids()
    assert batched_encoder(tokenizer, backend="cpu")({"text": []}) == {"input_ids": []}
    with pytest.raises(KeyError, match="no column 'body'"):
        batched_encoder(tokenizer, column="body")({"text": DOCS})
    with pytest.raises(ValueError, match="returns must be"):
        batched_encoder(tokenizer, returns="lists")


def test_arrow_outputs_do_not_import_pandas(tmp_path):
    """The Arrow list columns of the Parquet and HF outputs are built from numpy buffers without
    ``pa.array``, which imports pandas (CPU and the GIL, on a bulk job's writer thread)."""
    require("pyarrow")
    import subprocess
    import sys

    script = (
        "import sys, numpy as np, pyarrow.parquet as pq\n"
        "from gpu_text.outputs.parquet import ParquetWriter\n"
        "from gpu_text.ragged import RaggedArray\n"
        "w = ParquetWriter(sys.argv[1], with_offsets=True)\n"
        "spans = RaggedArray(np.array([0, 3, 7]), np.array([0, 2, 2, 3]))\n"
        "w.write(RaggedArray(np.array([5, 6, 7], np.int32), np.array([0, 2, 2, 3])), spans, spans)\n"
        "w.close()\n"
        "print('pandas' in sys.modules, pq.read_table(sys.argv[1]).to_pylist())\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "o.parquet")], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("False [{'ids': [5, 6], 'starts': [0, 3], 'ends': [0, 3]}, "
                                   "{'ids': [], 'starts': [], 'ends': []}, {'ids': [7], 'starts': [7], 'ends': [7]}]")
