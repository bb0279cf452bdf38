"""gpu-text segment / score / train-dict end to end on small files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_text.cli import main
from gpu_text.segment import Segmenter, load_dictionary
from gpu_text.textio import lines_to_batch
from tests.conftest import require


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


# ----------------------------------------------------------------- the streamed pipeline's output

SAMPLE = Path(__file__).resolve().parents[1] / "gpu_text" / "data" / "samples" / "zh-hongloumeng.txt"
# what real files hold beside plain lines: empty lines, lines of spaces (ASCII, ideographic, tabs),
# invalid UTF-8 (a stray byte, a cut sequence, a surrogate's encoding), CRLF endings, a lone \r
SPECIAL_LINES = [b"", b"   ", "\u3000\u3000".encode(), b"\t \t", b"\xff\xfe", "他是英国人".encode()[:-1],
                 b"\xed\xa0\x80abc", "A股大涨，KL178次列车；６４１人 hello  world\r".encode(), b"a\rb",
                 "编号123\r".encode(), b""]


def reference_output(segmenter, raw: bytes) -> bytes:
    """The whole input segmented in one batch, each line's word bytes joined by spaces: what
    ``gpu-text segment`` wrote before the pipeline, and must still write, byte for byte."""
    batch = lines_to_batch(raw)
    result = segmenter.segment(batch, backend="cpu")
    data = batch.data.tobytes()
    out = []
    for row, (starts, ends) in enumerate(zip(result.starts.to_pylist(), result.ends.to_pylist())):
        base = int(batch.offsets[row])
        out.append(b" ".join(data[base + s:base + e] for s, e in zip(starts, ends)) + b"\n")
    return b"".join(out)


def mixed_input() -> bytes:
    """Over 1 MiB (so ``--chunk-mb 1`` gives several batches) of real text with the special lines
    spread through it, LF and CRLF line ends, no newline at the very end."""
    lines = SAMPLE.read_bytes().split(b"\n") * 5
    for k, special in enumerate(SPECIAL_LINES):
        lines.insert(k * len(lines) // len(SPECIAL_LINES), special)
    ends = [b"\r\n" if k % 3 == 0 else b"\n" for k in range(len(lines))]
    return b"".join(line + end for line, end in zip(lines, ends))[:-2]


@pytest.mark.parametrize("compat", [None, "jieba"])
def test_segment_output_is_byte_identical_to_the_one_batch_join(tmp_path, capsys, compat):
    dictionary = tmp_path / "d.tsv"
    words = {"他": 50, "是": 40, "英国": 80, "英国人": 100, "人": 30, "贾宝玉": 60, "宝玉": 90, "黛玉": 80,
             "说道": 70, "一个": 120, "大涨": 10, "列车": 20}
    dictionary.write_text("".join(f"{w}\t{f}\n" for w, f in words.items()), encoding="utf-8")
    raw = mixed_input()
    assert len(raw) > 1 << 20
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(raw)
    args = ["segment", "--dict", str(dictionary), "--chunk-mb", "1", "--backend", "cpu", "--verbose", str(source),
            str(out)] + (["--compat", compat] if compat else [])
    assert main(args) == 0
    got = out.read_bytes()
    expected = reference_output(Segmenter(load_dictionary(dictionary), compat=compat), raw)
    assert got == expected
    line_count = raw.count(b"\n") + 1  # the last input line has no newline
    assert got.count(b"\n") == line_count  # one output line per input line
    lines = got.split(b"\n")
    assert b"\xff \xfe" in lines and b"" in lines and b"a\rb" not in lines  # \r is whitespace: dropped
    err = capsys.readouterr().err
    assert f"segmented {line_count} lines" in err
    for stage in ("start-up", "dictionary", "read", "segment", "join", "write", "batches"):
        assert stage in err
    assert " 1 batches" not in err  # several batches went through the pipeline


def test_segment_words_are_jiebas(tmp_path):
    jieba = require("jieba")
    dict_path = Path(jieba.__file__).parent / "dict.txt"
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").split("\n")[:300]]
    lines += ["A股大涨，KL178次列车和C2C模式；６４１人 hello  world", "C++ 和 C# 的 3.5% 增长-率 a_b&c", "", "  "]
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["segment", "--dict", str(dict_path), "--compat", "jieba", "--backend", "cpu", str(source),
                 str(out)]) == 0
    tokenizer = jieba.Tokenizer(str(dict_path))
    tokenizer.initialize()
    expected = [" ".join(w for w in tokenizer.cut(line, HMM=False) if not w.isspace()) for line in lines]
    assert out.read_text(encoding="utf-8").split("\n") == expected + [""]


def test_segment_error_mid_stream_names_the_line_and_leaves_no_output(tmp_path, capsys):
    dictionary = tmp_path / "d.tsv"
    dictionary.write_text("他\t50\n", encoding="utf-8")
    source, out = tmp_path / "in.txt", tmp_path / "out.txt"
    # batches of 1 MiB: the first ones are segmented and written before the too-long line is read
    source.write_bytes(("他是" * 100 + "\n").encode() * 8000 + b"x" * (2 << 20) + b"\n")
    assert main(["segment", "--dict", str(dictionary), "--chunk-mb", "1", "--max-document-mb", "1",
                 "--backend", "cpu", str(source), str(out)]) == 2
    assert "in.txt:8001: document longer than 1048576 bytes" in capsys.readouterr().err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["d.tsv", "in.txt"]
