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


def test_crf_train_segmented_default_columns_are_width_robust(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("１９９８年  １２月  ３１日  ，  南京  市长\nＧＤＰ  增长  ８％\n" * 4, encoding="utf-8")
    model = tmp_path / "m.crf"
    assert main(["crf", "train", "--segmented", "--rho1", "0", "--backend", "cpu", str(train), str(model)]) == 0
    assert model.read_text(encoding="utf-8").startswith("gpu_text-crf 2\n")
    raw = tmp_path / "raw.txt"
    raw.write_text("１９９８年１２月３１日，南京市长\n\n1998年12月31日，南京市长\nGDP增长8%\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    capsys.readouterr()
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", str(raw), str(out)]) == 0
    assert out.read_text(encoding="utf-8") == ("１９９８年 １２月 ３１日 ， 南京 市长\n\n1998年 12月 31日 ， 南京 市长\n"
                                               "GDP 增长 8%\n")
    err = capsys.readouterr().err
    assert "segmented 4 lines, 39 characters" in err and "characters/s" in err


def test_crf_train_segmented_with_dictionary(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("南京  市  长江  大桥\n大桥  在  南京\n长江  南京  市长\n" * 3, encoding="utf-8")
    lexicon = tmp_path / "dict.txt"
    lexicon.write_text("南京\t10\n长江大桥\t3\n市长\t5\n", encoding="utf-8")
    model = tmp_path / "m.crf"
    assert main(["crf", "train", "--segmented", "--dict", str(lexicon), "--rho1", "0", "--backend", "cpu",
                 str(train), str(model)]) == 0
    text = model.read_text(encoding="utf-8")
    assert "\ndict_inside\ndictionary 3\n南京\n市长\n长江大桥\n" in text
    raw = tmp_path / "raw.txt"
    raw.write_text("南京市长江大桥\n大桥在南京\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", str(raw), str(out)]) == 0
    assert "".join(out.read_text(encoding="utf-8").split()) == "南京市长江大桥大桥在南京"
    capsys.readouterr()
    assert main(["crf", "eval", "--segmented", "--model", str(model), "--backend", "cpu", str(train)]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == 1.0


def test_crf_train_segmentation_options_need_segmented(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("He PRP B-NP\n", encoding="utf-8")
    lexicon = tmp_path / "dict.txt"
    lexicon.write_text("南京\t1\n", encoding="utf-8")
    for extra in (["--dict", str(lexicon)], ["--columns", "char"]):
        assert main(["crf", "train", *extra, "--backend", "cpu", str(train), str(tmp_path / "m.crf")]) == 2
        assert "need --segmented" in capsys.readouterr().err
    assert main(["crf", "train", "--segmented", "--columns", "fold,width", "--backend", "cpu", str(train),
                 str(tmp_path / "m.crf")]) == 2
    assert "distinct names" in capsys.readouterr().err


def test_crf_train_columns_char_is_wapic_on_raw_characters(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("南京  市  长江  大桥\n大桥  在  南京\n" * 3, encoding="utf-8")
    model = tmp_path / "m.crf"
    assert main(["crf", "train", "--segmented", "--columns", "char", "--rho1", "0", "--backend", "cpu", str(train),
                 str(model)]) == 0
    from gpu_text.crf.model import WAPIC_SEGMENTATION_PATTERN

    text = model.read_text(encoding="utf-8")
    assert "\n".join(line for line in WAPIC_SEGMENTATION_PATTERN.splitlines()) in text
    assert "\ncolumns 1\nchar\ndictionary 0\n" in text


def test_crf_segment_streams_in_slices_and_keeps_every_line(tmp_path, monkeypatch):
    from gpu_text.crf import commands

    _, model = trained_segmenter(tmp_path)
    lines = ["南京市长江大桥", "", "大桥在南京", "  ", "长江"] * 40
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = tmp_path / "whole.txt"
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", str(raw), str(whole)]) == 0
    monkeypatch.setattr(commands, "SEGMENT_CHARACTERS", 8)  # a few lines per labelling call
    sliced = tmp_path / "sliced.txt"
    assert main(["crf", "segment", "--model", str(model), "--backend", "cpu", str(raw), str(sliced)]) == 0
    got = sliced.read_text(encoding="utf-8").split("\n")[:-1]
    assert sliced.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")
    assert len(got) == len(lines) and [g.replace(" ", "") for g in got] == [t.replace(" ", "") for t in lines]


def test_crf_segment_reads_wac_models_through_load_wapic(tmp_path, monkeypatch):
    import sys
    import types

    from gpu_text.crf.model import CRF

    _, model = trained_segmenter(tmp_path)
    wac = tmp_path / "m.wac"
    wac.write_text("not read by CRF.load", encoding="utf-8")
    calls = []

    def load_wapic(path, backend=None):  # the importer's entry point; returns a real model
        calls.append(path)
        return CRF.load(str(model), backend=backend)

    monkeypatch.setitem(sys.modules, "gpu_text.crf.wapic_model", types.SimpleNamespace(load_wapic=load_wapic))
    raw = tmp_path / "raw.txt"
    raw.write_text("南京市长江大桥\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert main(["crf", "segment", "--model", str(wac), "--backend", "cpu", str(raw), str(out)]) == 0
    assert calls == [str(wac)] and out.read_text(encoding="utf-8") == "南京 市 长江 大桥\n"
