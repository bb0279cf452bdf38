"""Every command ends a bad invocation with one line on stderr and a non-zero exit code, never a
traceback: missing or unreadable files, malformed models and dictionaries, missing fields, bad
numbers."""
from __future__ import annotations

import pytest

from gpu_text.cli import main
from gpu_text.demo import MODEL


@pytest.fixture()
def files(tmp_path, monkeypatch):
    monkeypatch.delenv("GPU_TEXT_PROGRESS", raising=False)
    written = {  # key: (file name, content)
        "text": ("in.txt", "南京市长江大桥\nhello world\n"),
        "jsonl": ("in.jsonl", '{"body": "a"}\n'),
        "garbage": ("garbage.model", b"\xff\xfe\x00garbage"),
        "latin1": ("latin1.txt", b"[CounterSpec]\nmethod=caf\xe9\n"),
        "notes": ("notes.txt", "not a model at all\n"),
        "dict": ("dict.tsv", "他\t50\nbad line\n"),
        "badutf8": ("badutf8.txt", b"\xff\xfe\n"),
        "segmented": ("segmented.txt", "南京 市 长江 大桥\n"),
    }
    paths = {}
    for key, (name, content) in written.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        paths[key] = str(path)
    paths["missing"] = str(tmp_path / "missing.txt")
    paths["out"] = str(tmp_path / "out.txt")
    paths["model"] = str(MODEL)
    return paths


BAD_INVOCATIONS = {
    "info": [["info", "--bogus"]],
    "segment": [
        ["segment", "{missing}", "{out}"],
        ["segment", "--chunk-mb", "0", "{text}", "{out}"],
        ["segment", "--chunk-mb", "lots", "{text}", "{out}"],
        ["segment", "--dict", "{missing}", "{text}", "{out}"],
        ["segment", "--dict", "{dict}", "{text}", "{out}"],
        ["segment", "--field", "text", "{jsonl}", "{out}"],
        ["segment", "--compat", "nltk", "{text}", "{out}"],
        ["segment", "{text}", "{missing}/../nowhere/out.txt"],
    ],
    "train-dict": [
        ["train-dict", "{text}", "{out}", "--candidates", "{segmented}", "--target", "0"],
        ["train-dict", "{text}", "{out}", "--candidates", "{segmented}", "--min-count", "-3"],
        ["train-dict", "{text}", "{out}", "--candidates", "{segmented}", "--sub-iterations", "x"],
        ["train-dict", "{missing}", "{out}", "--candidates", "{segmented}"],
        ["train-dict", "{text}", "{out}", "--candidates", "{missing}"],
        ["train-dict", "{text}", "{out}"],
    ],
    "score": [
        ["score", "{missing}", "{segmented}"],
        ["score", "{segmented}", "{badutf8}"],
        ["score", "{segmented}"],
    ],
    "train-tokenizer": [
        ["train-tokenizer", "{text}", "-o", "{out}", "--vocab-size", "0"],
        ["train-tokenizer", "{text}", "-o", "{out}", "--vocab-size", "100"],  # fewer than the 259 fixed pieces
        ["train-tokenizer", "{text}", "-o", "{out}", "--character-coverage", "1.5"],
        ["train-tokenizer", "{text}", "-o", "{out}", "--min-count", "0"],
        ["train-tokenizer", "{text}", "-o", "{out}", "--max-piece-size", "-1"],
        ["train-tokenizer", "{missing}", "-o", "{out}"],
        ["train-tokenizer", "{jsonl}", "-o", "{out}", "--field", "text"],
        ["train-tokenizer", "{text}"],
    ],
    "tokenize": [
        ["tokenize", "--model", "{missing}", "{text}", "{out}.parquet"],
        ["tokenize", "--model", "{garbage}", "{text}", "{out}.parquet"],
        ["tokenize", "--model", "{latin1}", "{text}", "{out}.parquet"],
        ["tokenize", "--model", "{notes}", "{text}", "{out}.parquet"],
        ["tokenize", "--model", "{model}", "{missing}", "{out}.parquet"],
        ["tokenize", "--model", "{model}", "--field", "text", "{jsonl}", "{out}.parquet"],
        ["tokenize", "--model", "{model}", "--chunk-mb", "-1", "{text}", "{out}.parquet"],
        ["tokenize", "--model", "{model}", "--offsets", "{text}", "{out}.npy"],
    ],
    "crf": [
        ["crf"],
        ["crf", "train", "{missing}", "{out}"],
        ["crf", "train", "--rho1", "-1", "{segmented}", "{out}"],
        ["crf", "train", "--history", "0", "{segmented}", "{out}"],
        ["crf", "train", "--segmented", "--pattern", "{missing}", "{segmented}", "{out}"],
        ["crf", "train", "--segmented", "--rho1", "0", "{badutf8}", "{out}"],
        ["crf", "segment", "--model", "{missing}", "{text}", "{out}"],
        ["crf", "segment", "--model", "{garbage}", "{text}", "{out}"],
        ["crf", "segment", "--model", "{notes}", "{text}", "{out}"],
        ["crf", "label", "--model", "{latin1}", "{text}", "{out}"],
        ["crf", "eval", "--model", "{notes}", "{segmented}"],
        ["crf", "eval", "--segmented", "--model", "{missing}", "{segmented}"],
    ],
}


@pytest.mark.parametrize("command", sorted(BAD_INVOCATIONS))
def test_bad_invocations_end_with_one_line(command, files, capsys):
    for template in BAD_INVOCATIONS[command]:
        argv = [arg.format(**files) for arg in template]
        code = main(argv)
        err = capsys.readouterr().err
        assert code != 0, argv
        assert "Traceback" not in err, (argv, err)
        assert len(err.splitlines()) == 1, (argv, err)
        assert err.startswith(f"gpu-text {command}") and ": error: " in err, (argv, err)


def test_train_tokenizer_vocab_size_is_the_model_size(tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("low lower lowest newer wider\n" * 20, encoding="utf-8")
    out = tmp_path / "m.model"
    assert main(["train-tokenizer", str(corpus), "-o", str(out), "--vocab-size", "280",
                 "--character-coverage", "1"]) == 0
    from gpu_text.tokenizer.model_file import read_model_file

    assert len(read_model_file(out).pieces.pieces) == 280
    assert "wrote 280 pieces" in capsys.readouterr().err
