"""Wapic ``.wac`` models read into a CRF (issue 14): hand-decoded tiny models in every section
format, the ``wapic`` package as the oracle (hand-written models with every command kind, and its
default model on People's Daily and adversarial text), and damaged files."""
from __future__ import annotations

import random
import struct
from pathlib import Path

import numpy as np
import pytest

from gpu_text.crf import CRF
from gpu_text.crf.wapic_model import WapicCRF, is_wapic_model, load_wapic
from gpu_text.crf.wapic_patterns import parse_wapic_pattern

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "zh-people-daily-199801" / "199801_segmented_words.txt"


def text_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return str(len(raw)).encode() + b":" + raw + b",\n"


def binary_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack("<H", len(raw)) + raw


def varint(value: int) -> bytes:
    out = b""
    while value >= 0x80:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def wac_bytes(patterns: list[str], labels: list[str], observations: list[str], weights: dict[int, float],
              trie: str = "text", model: str = "text") -> bytes:
    """A model file as Wapic writes it: text or binary string sections, text / fp32 / fp64 weights."""
    out = b"#Patterns#%d#1\n" % len(patterns) + b"".join(map(text_string, patterns))
    for strings in (labels, observations):
        if trie == "text":
            out += b"#Trie#%d\n" % len(strings) + b"".join(map(text_string, strings))
        else:
            out += b"#TrieBin#%d\n" % len(strings) + b"".join(map(binary_string, strings))
    active = sorted((i, w) for i, w in weights.items() if w != 0)
    if model == "text":
        return out + b"#Model#%d\n" % len(active) + b"".join(b"%d=%s\n" % (i, w.hex().encode()) for i, w in active)
    header, fmt = (b"#ModelBin32#", "<f") if model == "bin32" else (b"#ModelBin#", "<d")
    out += header + b"%d\n" % len(active)
    previous = -1
    for i, w in active:
        out += varint(i - previous) + struct.pack(fmt, w)
        previous = i
    return out


# u:a owns weights 0-1 (A, B); b owns 2-5 ([yp*2+y]: AA AB BA BB); u:b owns 6-7
TINY = (["u:%x[0,0]", "b"], ["A", "B"], ["u:a", "b", "u:b"], {0: 1.0, 2: 0.5, 5: -2.0, 7: 1.5})


def write(tmp_path: Path, data: bytes, name: str = "m.wac") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("trie,model", [("text", "text"), ("binary", "bin32"), ("binary", "bin64"),
                                        ("text", "bin32")])
def test_tiny_model_decoded_by_hand(tmp_path, trie, model):
    crf = load_wapic(write(tmp_path, wac_bytes(*TINY, trie=trie, model=model)), backend="cpu")
    assert isinstance(crf, CRF) and crf.labels_ == ["A", "B"]
    assert (crf.n_unigram_, crf.n_bigram_) == (2, 1)
    assert crf.bigram_weights_.tolist() == [[[0.5, 0.0], [0.0, -2.0]]]  # row = previous label
    # a b z: emissions A=1 | B=1.5 | unknown z = 0; delta1 = [1.5 (A), 2.5 (A)], delta2 = [2.5 (B), 1.5 (A)]
    # b b: delta1 = [1.5 from B, 1.5 from A]: a tie, which goes to the lower label, A
    assert crf.predict([["a", "b", "z"], ["z"], ["b", "b"], []]) == [["A", "B", "A"], ["A"], ["B", "A"], []]


def test_text_forms_wapic_reads(tmp_path):
    """CRLF line ends and decimal weights (std::stod reads both) give the same model."""
    plain = wac_bytes(*TINY)
    crlf = load_wapic(write(tmp_path, plain.replace(b"\n", b"\r\n"), "crlf.wac"), backend="cpu")
    decimal = plain.replace(b"0x1.0000000000000p-1", b"0.5").replace(b"0x1.8000000000000p+0", b"1.5")
    assert b"=0.5" in decimal and b"=1.5" in decimal
    tagged = load_wapic(write(tmp_path, decimal, "dec.wac"), backend="cpu")
    for crf in (crlf, tagged):
        assert crf.predict([["a", "b", "z"], ["b", "b"]]) == [["A", "B", "A"], ["B", "A"]]
        assert crf.bigram_weights_.tolist() == [[[0.5, 0.0], [0.0, -2.0]]]


def test_repeated_weight_index_keeps_the_last(tmp_path):
    data = wac_bytes(*TINY).replace(b"#Model#4\n", b"#Model#5\n7=-0x1p+3\n")  # then 7=1.5 later
    assert load_wapic(write(tmp_path, data), backend="cpu").unigram_weights_.tolist() == [[1.0, 0.0], [0.0, 1.5]]


def test_from_wapic_and_the_gpu_text_round_trip(tmp_path):
    crf = CRF.from_wapic(write(tmp_path, wac_bytes(*TINY)), backend="cpu")
    assert isinstance(crf, WapicCRF)
    crf.save(str(tmp_path / "m.crf"))
    again = CRF.load(str(tmp_path / "m.crf"), backend="cpu")
    X = [["a", "b", "z"], ["b", "b"], ["b", "a", "a", "b"]]
    assert again.predict(X) == crf.predict(X) == [["A", "B", "A"], ["B", "A"], ["B", "A", "A", "B"]]


def test_patterns_with_wapic_semantics():
    absolute, _ = parse_wapic_pattern("u:%x[@1,0]/%x[@-1,0]")  # Wapic counts @ from 1
    assert [(c.absolute, c.offset) for c in absolute.commands] == [(True, 0), (True, -1)]
    constant, _ = parse_wapic_pattern("u:%x[@0,0]")  # before the sentence at every token
    assert constant.literals == ("u:_x-1",) and not constant.commands
    caps, _ = parse_wapic_pattern("u:%X[0,0]")
    assert caps.commands[0].transform("ÉAb") == "Éab"  # ASCII letters only, as C's tolower
    match, _ = parse_wapic_pattern('u:%m[0,0,"\\\\d\\\\d*"]')  # Wapic drops a backslash, keeps the next character
    assert match.commands[0].regex == "\\d\\d*" and match.commands[0].transform("ab123c") == "1"  # a lazy *
    assert parse_wapic_pattern('u:%m[0,0,"\\\\d*c"]')[0].commands[0].transform("ab123c") == "123c"
    assert parse_wapic_pattern("U:%x[0,0]")[0] is None  # its observations start with U: never a feature
    with pytest.raises(ValueError, match="malformed command"):
        parse_wapic_pattern("u:%x[a,0]")




def oracle():
    return pytest.importorskip("wapic", reason="the wapic package (pip install wapic wapic-cws-model) is the oracle")


ALPHABET = ["a", "b", "A", "B", "É", "é", "1", "中", "/", "x"]
RICH_PATTERNS = ["u1:%x[@1,0]", "u2:%X[0,0]", 'u3:%t[0,0,"A"]', 'u4:%M[-1,0,"b?1*"]', "u5:%x[@-1,0]/%x[-1,0]",
                 "u6:%x[@0,0]", 'u7:%t[1,0,"\\\\d"]', "*s:%x[-1,0]", "u8:%x[0,0]%x[1,0]", 'u9:%m[0,0,"\\\\u.*"]', "b"]


def rich_model(seed: int) -> tuple[list[str], list[str], list[str], dict[int, float]]:
    """Every command kind, absolute positions, a '*' pattern, an empty separator and '/' tokens,
    with random weights on every observation a token of ALPHABET could give (and more)."""
    values = ALPHABET + ["_x-1", "_x-2", "_x+1", "_x+2", "true", "false", "", "b1", "b11"]
    observations = []
    for pattern in RICH_PATTERNS:
        head = pattern.split("%")[0]
        if "%" not in pattern:
            observations.append(pattern)
        elif "/" in pattern or pattern.startswith("u8"):
            sep = "/" if "/" in pattern else ""
            observations += [f"{head}{a}{sep}{b}" for a in values for b in values]
        else:
            observations += [f"{head}{a}" for a in values]
    observations = list(dict.fromkeys(observations))
    labels = ["P", "Q", "R"]
    rng = random.Random(seed)
    size = sum(3 * (o[0] in "u*") + 9 * (o[0] in "b*") for o in observations)
    weights = {i: rng.uniform(-2, 2) for i in range(size) if rng.random() < 0.6}
    return RICH_PATTERNS, labels, observations, weights


@pytest.mark.parametrize("trie,model", [("text", "text"), ("binary", "bin32")])
def test_every_command_kind_matches_wapic(tmp_path, trie, model):
    wapic_package = oracle()
    patterns, labels, observations, weights = rich_model(7)
    if model == "bin32":  # fp32 weights: make them exactly representable so both sides read the same values
        weights = {i: float(np.float32(w)) for i, w in weights.items()}
    path = write(tmp_path, wac_bytes(patterns, labels, observations, weights, trie=trie, model=model))
    ours, theirs = load_wapic(path, backend="cpu"), wapic_package.Segmenter(path)
    rng = random.Random(3)
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 12))) for _ in range(600)]
    assert ours.predict([list(t) for t in texts]) == [theirs.tag(t)[1] for t in texts]


@pytest.fixture(scope="module")
def default_models():
    wapic_package = oracle()
    model = pytest.importorskip("wapic_model", reason="the default model comes with wapic-cws-model")
    path = model.model_path()
    return load_wapic(path, backend="cpu"), wapic_package.Segmenter(path)


def test_default_model_reads_every_observation(default_models):
    ours, theirs = default_models
    assert ours.labels_ == ["B", "M", "E", "S"] and theirs.label_count == 4
    # every observation of the file became a feature: the weight counts agree with Wapic's
    assert ours.n_unigram_ * 4 + ours.n_bigram_ * 16 == theirs.feature_count


def people_daily(step: int) -> list[str]:
    if not DATA.exists():
        pytest.skip(f"{DATA} is not there")
    lines = DATA.read_text(encoding="utf-8").split("\n")
    return ["".join(line.split()) for line in lines[::step]]


def test_default_model_segments_people_daily_like_wapic(default_models):
    ours, theirs = default_models
    texts = people_daily(4)  # every 4th line (the whole month: 19,485 lines, 0 differences, in the report)
    assert len(texts) > 4000
    assert ours.segment(texts) == theirs.segment_batch(texts)


def test_default_model_labels_raw_characters_like_wapic(default_models):
    """No pre-segmentation: every character (full-width digits and letters, punctuation) through
    the CRF, against Wapic's tag()."""
    ours, theirs = default_models
    texts = [t for t in people_daily(16) if 0 < len(t) <= 1024]
    assert ours.predict([list(t) for t in texts]) == [theirs.tag(t)[1] for t in texts]


ADVERSARIAL = [
    "", " ", "\t\n", "\u3000\u00a0", "中", "中 国", "中\u3000国\u00a0人", "iPhone12发布了", "ＡＢＣ１２３中文ａｂｃ",
    "1998年12月31日", "１９９８年１２月３１日", "3.14159是圆周率", "价格：￥１２，３４５．６元", "50%的人", "５０％的人",
    "C++和Python", "U.S.A.的", "e-mail地址是a@b.com", "〇一二三", "×÷±", "Ｔｅｓｔ／测试／test", "a/b//c", "//中//",
    "_x-1和u05:测试", "😀表情😀符号", "é和É和ü", "Ελληνικά和Кириллица", "한국어和日本語のかな", "𠀀𠀁𪚥字",
    "“引号”‘单引’《书名》【括号】", "——破折号……省略号", "中\u0301文", "\ufeff开头", "a\u00a0b\u3000c",
    "北京大学和清华大学是中国最好的两所高校", "中华人民共和国是一个伟大的国家",
]


def test_default_model_adversarial_lines_like_wapic(default_models):
    ours, theirs = default_models
    long_run = "".join(c for c in "".join(people_daily(50)) if "\u4e00" <= c <= "\u9fff")[:2600]
    texts = ADVERSARIAL + [long_run, long_run + "x" + long_run[:1500]]  # Wapic cuts Han runs every 1024
    assert ours.segment(texts) == [theirs.segment(t) for t in texts]
    plain = [t for t in texts if t and not any(c in " \t\n\u3000\u00a0" for c in t) and len(t) <= 1024]
    assert ours.predict([list(t) for t in plain]) == [theirs.tag(t)[1] for t in plain]


# -- damaged files -----------------------------------------------------------------------------

def load_error(tmp_path: Path, data: bytes) -> str:
    path = write(tmp_path, data, "bad.wac")
    with pytest.raises(ValueError) as info:
        load_wapic(path)
    assert str(info.value).startswith(path)
    return str(info.value)


@pytest.mark.parametrize("old,new,expected", [
    (b"0=0x1p+0", b"0=0x1.zp+0", "line 12: expected '<index>=<hexfloat weight>', found '0=0x1.zp+0'"),
    (b"7=0x1.8p+0", b"7=inf", "not a finite number"),
    (b"7=0x1.8p+0", b"7", "line 15: expected '<index>=<hexfloat weight>', found '7'"),
    (b"7=0x1.8p+0", b"99=0x1.8p+0", "weight index 99 is out of range (the model has 8 weights)"),
    (b"#Model#4", b"#Model#6", "announces 6 weights, the file has 4 (truncated)"),
    (b"#Model#4", b"#Model#3", "line 15: unexpected content after the 3 announced weights"),
    (b"#Trie#3", b"#Trie#4", "line 11: string 4 of 4: expected '<length>:'"),
    (b"#Trie#3", b"#Trie#2", "line 10: expected the '#Model#<count>' weights header, found '3:u:b,'"),
    (b"#Patterns#2#1", b"#Patterns#3#1", "line 4: string 3 of 3: expected '<length>:'"),
    (b"#Model#4", b"#Weights#4", "line 11: expected the '#Model#<count>' weights header, found '#Weights#4'"),
    (b"#Trie#2", b"#Tree#2", "line 4: expected the '#Trie#<count>' (labels) header"),
    (b"3:u:a,", b"4:u:a,", "string 1 of 3: 4 bytes then ',' expected"),
    (b"3:u:a,", b"3:x:a,", "observation 0 does not start with u, b or *"),
    (b"9:u:%x[0,0],", b"9:u:%x[a,0],", "line 2: 'u:%x[a,0]': malformed command"),
    (b"1:A,", b"1:B,", "the labels must be distinct"),
])
def test_damaged_text_files_name_the_line(tmp_path, old, new, expected):
    data = wac_bytes(*TINY).replace(b"0x1.0000000000000p+0", b"0x1p+0").replace(b"0x1.8000000000000p+0", b"0x1.8p+0")
    assert old in data
    assert expected in load_error(tmp_path, data.replace(old, new, 1))


def test_not_a_wapic_file(tmp_path):
    path = write(tmp_path, b"gpu_text-crf 1\n", "m.crf")
    assert not is_wapic_model(path) and is_wapic_model(write(tmp_path, wac_bytes(*TINY)))
    with pytest.raises(ValueError, match="is not a Wapic model"):
        load_wapic(path)


@pytest.mark.parametrize("trie,model", [("text", "text"), ("binary", "bin32"), ("binary", "bin64")])
def test_every_truncation_is_an_error_or_the_whole_model(tmp_path, trie, model):
    data = wac_bytes(*TINY, trie=trie, model=model)
    whole = load_wapic(write(tmp_path, data, "whole.wac"), backend="cpu").predict([["a", "b", "z"]])
    for cut in range(len(data)):
        path = write(tmp_path, data[:cut], "cut.wac")
        try:
            crf = load_wapic(path, backend="cpu")
        except ValueError as exc:
            assert str(exc).startswith(path)
            continue
        # text weights have no end mark: a cut inside the last weight can leave a shorter valid number
        last_line = data.rfind(b"\n", 0, len(data) - 1) + 1
        assert (cut > last_line + 2 and model == "text") or cut == len(data) - 1, cut
        if cut == len(data) - 1:  # only the final newline gone
            assert crf.predict([["a", "b", "z"]]) == whole


@pytest.mark.parametrize("trie,model", [("text", "text"), ("binary", "bin32")])
def test_corrupted_bytes_never_crash(tmp_path, trie, model):
    data = wac_bytes(*TINY, trie=trie, model=model)
    rng = random.Random(11)
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        path = write(tmp_path, bytes(damaged), "fuzz.wac")
        try:
            crf = load_wapic(path, backend="cpu")
        except ValueError as exc:
            assert str(exc).startswith(path)
            continue
        assert len(crf.predict([["a", "b", "z"]])[0]) == 3
