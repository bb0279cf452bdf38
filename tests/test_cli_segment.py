"""gpu-text segment / score / train-dict end to end on small files."""
from __future__ import annotations

import json

from gpu_text.cli import main


def test_segment_streams_lines_and_keeps_empty_ones(tmp_path, capsys):
    dictionary = tmp_path / "d.tsv"
    dictionary.write_text("他\t50\n是\t40\n英国\t80\n英国人\t100\n人\t30\n", encoding="utf-8")
    source = tmp_path / "in.txt"
    lines = ["他是英国人Tom，编号123", "", "  你好 世界！", "他是" * 5000]
    source.write_text("\n".join(lines), encoding="utf-8")  # no newline after the last line
    out = tmp_path / "out.txt"
    assert main(["segment", "--dict", str(dictionary), "--chunk-mb", "1", "--backend", "cpu", str(source), str(out)]) == 0
    got = out.read_text(encoding="utf-8").split("\n")
    assert got[:3] == ["他 是 英国人 Tom ， 编 号 123", "", "你 好 世 界 ！"]
    assert got[3] == " ".join(["他", "是"] * 5000) and got[4] == "" and len(got) == 5


def test_malformed_dictionary_line_is_named_or_skipped(tmp_path, capsys):
    dictionary = tmp_path / "d.tsv"
    dictionary.write_text("他\t50\nbad line\n", encoding="utf-8")
    source = tmp_path / "in.txt"
    source.write_text("他他\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["segment", "--dict", str(dictionary), str(source), str(out)]) == 2
    assert "d.tsv:2: frequency 'line' is not an integer" in capsys.readouterr().err
    assert main(["segment", "--dict", str(dictionary), "--on-error", "skip", str(source), str(out)]) == 0
    assert "skipped 1 malformed dictionary lines" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "他 他\n"


def test_score_and_train_dict(tmp_path, capsys):
    gold = tmp_path / "gold.txt"
    gold.write_text("南京 市 长江 大桥\n我们 学习\n", encoding="utf-8")
    pred = tmp_path / "pred.txt"
    pred.write_text("南京 市长 江 大桥\n我们 学习\n", encoding="utf-8")
    assert main(["score", str(gold), str(pred), "--words", str(gold)]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["correct_words"] == 4 and score["gold_words"] == 6 and score["predicted_words"] == 6

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("我们学习人工智能\n我们学习\n人工智能学习\n" * 20, encoding="utf-8")
    candidates = tmp_path / "candidates.txt"
    candidates.write_text("\n".join(["我们", "学习", "人工", "智能", "人工智能", "我", "们", "学", "习"]), encoding="utf-8")
    trained = tmp_path / "trained.tsv"
    assert main(["train-dict", str(corpus), str(trained), "--candidates", str(candidates), "--target", "6",
                 "--min-count", "2", "--backend", "cpu"]) == 0
    words = dict(line.split("\t") for line in trained.read_text(encoding="utf-8").splitlines())
    assert words["人工智能"] == "40" and words["学习"] == "60" and "人工" not in words


def test_segment_reads_any_document_input(tmp_path, capsys, monkeypatch):
    import gzip
    import io
    import sys

    dictionary = tmp_path / "d.tsv"
    dictionary.write_text("英国\t80\n英国人\t100\n", encoding="utf-8")
    jsonl = tmp_path / "in.JSONL.gz"  # compressed, upper-case suffix, a field other than 'text'
    jsonl.write_bytes(gzip.compress('{"body": "英国人"}\n{"body": "a\\u2028b"}\n'.encode()))
    out = tmp_path / "out.txt"
    assert main(["segment", "--dict", str(dictionary), "--field", "body", "--backend", "cpu", str(jsonl),
                 str(out)]) == 0
    assert out.read_text(encoding="utf-8").split("\n") == ["英国人", "a b", ""]  # one line per document
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("英国人\r\n\r\n英国".encode())))
    capsys.readouterr()
    assert main(["segment", "--dict", str(dictionary), "--backend", "cpu", "-", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "英国人\n\n英国\n" and "segmented 3 lines" in captured.err
