"""``gpu-text crf train / segment / label / eval`` end to end on tiny files."""
from __future__ import annotations

import json

from gpu_text.cli import main


def trained_segmenter(tmp_path):
    """A CRF trained on a few segmented lines, through the CLI: (training file, model file)."""
    train = tmp_path / "train.txt"
    train.write_text("南京  市  长江  大桥\n大桥  在  南京\n长江  南京  市长\n" * 3, encoding="utf-8")
    model = tmp_path / "m.crf"
    assert main(["crf", "train", "--segmented", "--rho1", "0", "--backend", "cpu", str(train), str(model)]) == 0
    return train, model


def test_crf_cli_segmented(tmp_path, capsys):
    train, model = trained_segmenter(tmp_path)
    raw = tmp_path / "raw.txt"
    raw.write_text("南京市长江大桥\n\n大桥在南京\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", str(raw), str(out)]) == 0
    assert out.read_text(encoding="utf-8") == "南京 市 长江 大桥\n\n大桥 在 南京\n"
    capsys.readouterr()
    assert main(["crf", "eval", "--segmented", "--model", str(model), "--backend", "cpu", str(train)]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == 1.0


def test_crf_cli_conll(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("He PRP B-NP\nran VBD B-VP\n\nShe PRP B-NP\nsat VBD B-VP\n", encoding="utf-8")
    pattern = tmp_path / "p.txt"
    pattern.write_text("U:%x[0,0]\nU1:%x[0,1]\nB\n")
    model = tmp_path / "m.crf"
    assert main(["crf", "train", "--pattern", str(pattern), "--backend", "cpu", "--rho1", "0.1", str(train),
                 str(model)]) == 0
    unlabelled = tmp_path / "in.txt"
    unlabelled.write_text("It PRP\nran VBD\n")
    out = tmp_path / "out.txt"
    assert main(["crf", "label", "--model", str(model), "--backend", "cpu", str(unlabelled), str(out)]) == 0
    assert out.read_text() == "It PRP B-NP\nran VBD B-VP\n\n"


def test_crf_segment_keeps_unicode_line_breaks_inside_a_line(tmp_path, capsys):
    import gzip

    _, model = trained_segmenter(tmp_path)
    raw = tmp_path / "raw.txt.gz"
    raw.write_bytes(gzip.compress("南京\u2028大桥\r\n大桥在南京".encode()))
    out = tmp_path / "out.txt"
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", "--chunk-mb", "1", str(raw),
                 str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").split("\n")) == 3  # two documents, each one line
    assert "segmented 2 lines" in capsys.readouterr().err
