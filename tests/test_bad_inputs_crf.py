"""Bad CRF inputs: pattern files, CoNLL / segmented training data and model files.

Every damaged file either works (a model then labels a fixed input with labels of its own label
set) or is refused with a ``ValueError`` naming the file (and the line) — never another exception,
never a NaN model. Through the real CLI: exit code 2, one stderr line naming the file, the inputs
untouched and no output left behind.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from gpu_text.crf import CRF, parse_patterns, read_conll, read_segmented_bmes
from gpu_text.crf.patterns import read_pattern_file
from tests.conftest import require

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PATTERN = 'U0:%x[0,0]\nU1:%x[-1,0]/%X[0,1]\n*2:%t[0,0,"^[0-9]+$"]\nu3:%m[@-1,1,"[a-z]+"]\nB\n'
CONLL = "He prp B-NP\nran vbd B-VP\n12 cd B-NP\n\nShe prp B-NP\nsat vbd B-VP\n\nIt prp B-NP\nran vbd B-VP\n"
PROBE = [[("He", "prp"), ("sat", "vbd")], [("zz", "qq"), ("12", "cd"), ("It", "prp")]]
MUTATION = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A pattern file, a CoNLL file and the model trained on them."""
    folder = tmp_path_factory.mktemp("crf")
    paths = {"pattern": folder / "p.txt", "conll": folder / "train.txt", "model": folder / "m.crf"}
    paths["pattern"].write_text(PATTERN, encoding="utf-8")
    paths["conll"].write_text(CONLL, encoding="utf-8")
    X, y = read_conll(str(paths["conll"]))
    CRF(pattern=PATTERN, rho1=0.0, rho2=0.01, max_iterations=20, backend="cpu").fit(X, y).save(str(paths["model"]))
    return paths


def refused(call, path: Path) -> str:
    """The message of the ``ValueError`` ``call()`` raises, which must name ``path``."""
    with pytest.raises(ValueError) as error:
        call()
    assert str(path) in str(error.value)
    return str(error.value)


# -- pattern files ------------------------------------------------------------------------------


@pytest.mark.parametrize("text,message", [
    ('U:%x[0,0]\nu%t[0,0,"(a"]\n', r"line 2: .*bad regular expression '\(a'"),
    ("U:%x[0,0]\nx%x[0,0]\n", "line 2: .*must start with u, b or"),
    ("# only a comment\n\n", "no pattern lines"),
    ("u%x[99999999999999999999,0]\n", "line 1: .*out of range"),
    ("u%x[0,0]%\n", "line 1: .*malformed % command"),
    ("u%t[0,0]\n", "line 1: .*needs a regular expression"),
])
def test_bad_pattern_file_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "p.txt"
    path.write_text(text, encoding="utf-8")
    assert re.search(message, refused(lambda: read_pattern_file(str(path)), path))


def test_pattern_file_bom_crlf_and_not_utf8(tmp_path):
    path = tmp_path / "p.txt"
    path.write_bytes(b"\xef\xbb\xbfU:%x[0,0]\r\nB\r\n")
    assert [p.text for p in parse_patterns(read_pattern_file(str(path)))] == ["U:%x[0,0]", "B"]
    path.write_bytes(b"U:%x[0,0]\n\xff\n")
    assert "not UTF-8" in refused(lambda: read_pattern_file(str(path)), path)


def test_pattern_with_hundreds_of_commands_trains():
    pattern = "u" + "/".join(["%x[0,0]"] * 400)  # the key no longer fits 62 bits: hashed, not an overflow
    crf = CRF(pattern=pattern + "\nB", rho1=0.0, max_iterations=5, backend="cpu").fit([["a", "b"]], [["A", "B"]])
    assert crf.predict([["a", "b"]]) == [["A", "B"]]


def test_pattern_without_lines_is_refused_at_fit():
    with pytest.raises(ValueError, match="no u, b or \\* line"):
        CRF(pattern="# nothing\n", backend="cpu").fit([["a"]], [["A"]])


# -- training data ------------------------------------------------------------------------------


def test_ragged_conll_names_file_and_line(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("a X B\nb Y I\n\nc O\n", encoding="utf-8")
    assert "line 4: 2 columns, but line 1 has 3" in refused(lambda: read_conll(str(path)), path)


def test_data_files_drop_a_bom_and_name_bad_utf8(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("\ufeffa X B\r\nb Y I\n".encode())
    assert read_conll(str(path)) == ([[("a", "X"), ("b", "Y")]], [["B", "I"]])
    assert read_conll(["\ufeffa B"]) == ([[("a",)]], [["B"]])
    path.write_bytes("\ufeff南京 长江\n".encode())
    assert read_segmented_bmes(str(path))[0][0][0] == ("南",)
    path.write_bytes(b"a B\n\xc3\n")
    assert "line 2: not UTF-8" in refused(lambda: read_conll(str(path)), path)


def test_empty_training_data_is_a_clear_error():
    with pytest.raises(ValueError, match="no training sequences"):
        CRF(backend="cpu").fit([], [])
    with pytest.raises(ValueError, match="no training sequences"):
        CRF(backend="cpu").fit([[]], [[]])


@pytest.mark.parametrize("y,X_dev,y_dev,message", [
    ([[""]], None, None, "a label must be a non-empty string, got ''"),
    ([[None]], None, None, "a label must be a non-empty string, got None"),
    ([["A"]], [["a", "b"]], [["A"]], "X_dev and y_dev must have the same"),
])
def test_bad_labels_and_dev_data_are_refused_at_fit(y, X_dev, y_dev, message):
    with pytest.raises(ValueError, match=message):
        CRF(pattern="u%x[0,0]", backend="cpu").fit([["a"]], y, X_dev, y_dev)


def test_diverging_training_stops_instead_of_writing_nan():
    X, y = [["a", "b", "a"], ["b", "b"]] * 3, [["A", "B", "A"], ["B", "B"]] * 3
    crf = CRF(pattern="u:%x[0,0]\nb", algorithm="sgd-l1", rho1=0.0, learning_rate=1e200, backend="cpu")
    with pytest.raises(ValueError, match="diverged"), np.errstate(all="ignore"):
        crf.fit(X, y)
    for name in ("rho2", "learning_rate"):
        with pytest.raises(ValueError, match=name):
            CRF(**{name: float("inf")}, backend="cpu").fit(X, y)


# -- model files --------------------------------------------------------------------------------


def model_lines(files) -> list[str]:
    return files["model"].read_text(encoding="utf-8").split("\n")


def section_line(lines: list[str], name: str) -> int:
    """Index of the first row of section ``name``."""
    return next(i for i, line in enumerate(lines) if line.startswith(name + " ")) + 1


def with_line(files, tmp_path, section: str, edit) -> Path:
    lines = model_lines(files)
    i = section_line(lines, section)
    lines[i] = edit(lines[i])
    path = tmp_path / "bad.crf"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def weights_to(value: str):
    return lambda line: "\t".join(line.split("\t")[:2] + [" ".join([value] * len(line.split("\t")[2].split()))])


@pytest.mark.parametrize("section,edit,message", [
    ("unigram", weights_to("nan"), "weight 'nan' is not a finite number"),
    ("bigram", weights_to("inf"), "weight 'inf' is not a finite number"),
    ("unigram", weights_to("1e999"), "not a finite number"),
    ("unigram", weights_to("x"), "weight 'x' is not a finite number"),
    ("unigram", lambda line: line + " 1.0", "expected 2 weights, found 3"),
    ("unigram", lambda line: "U0\t0 99999\t1 2", "value id 99999"),
    ("unigram", lambda line: "U0\t77 0\t1 2", "namespace 77"),
    ("unigram", lambda line: "U0\t0 0 0\t1 2", "takes 1 value id"),
    ("unigram", lambda line: "U0\t0 -1\t1 2", "not non-negative integers"),
    ("unigram", lambda line: "U0 0 0 1 2", "3 tab-separated fields"),
    ("bigram", lambda line: "x\t0 0\t1 1 1 1", "not one of the model's bigram patterns"),
    ("labels", lambda line: "", "empty label"),
    ("patterns", lambda line: "q%x[0,0]", "must start with u, b or"),
    ("patterns", lambda line: 'u%t[0,0,"["]', "bad regular expression"),
])
def test_damaged_model_names_file_and_line(files, tmp_path, section, edit, message):
    path = with_line(files, tmp_path, section, edit)
    got = refused(lambda: CRF.load(str(path), backend="cpu"), path)
    assert message in got and re.search(r"line \d+: ", got)


def test_model_truncated_duplicated_or_with_a_bom(files, tmp_path):
    text = files["model"].read_text(encoding="utf-8")
    path = tmp_path / "m.crf"
    path.write_text(text[:len(text) // 2], encoding="utf-8")
    assert "line" in refused(lambda: CRF.load(str(path)), path)
    lines = text.split("\n")
    i = section_line(lines, "values")
    path.write_text("\n".join(lines[:i + 1] + lines[i:]), encoding="utf-8")  # one value twice
    assert "repeated value" in refused(lambda: CRF.load(str(path)), path)
    i = section_line(lines, "unigram")
    path.write_text("\n".join(lines[:i] + [lines[i + 1]] + lines[i + 1:]), encoding="utf-8")
    assert f"line {i + 2}: the same unigram observation as line {i + 1}" in refused(lambda: CRF.load(str(path)), path)
    path.write_text(text + "extra\n", encoding="utf-8")
    assert "after the bigram section" in refused(lambda: CRF.load(str(path)), path)
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    original = CRF.load(str(files["model"]), backend="cpu")
    assert CRF.load(str(path), backend="cpu").predict(PROBE) == original.predict(PROBE)


@pytest.mark.parametrize("pattern", ["u:%x[0,0]\nu:%x[-1,0]", "b:%x[0,0]\nB", "B"])
def test_pattern_without_unigram_or_bigram_lines_saves_and_loads(tmp_path, pattern):
    X, y = [["a", "b", "a"], ["b", "b"]], [["A", "B", "A"], ["B", "B"]]
    crf = CRF(pattern=pattern, rho1=0.0, backend="cpu").fit(X, y)
    crf.save(str(tmp_path / "m.crf"))
    assert CRF.load(str(tmp_path / "m.crf"), backend="cpu").predict(X) == crf.predict(X)


# -- mutation -----------------------------------------------------------------------------------

NUMBER = re.compile(rb"-?[0-9][0-9.e+-]*")
ODD_NUMBERS = [b"nan", b"inf", b"-inf", b"1e999", b"-1", b"0", b"1e308", b"-1e308", b"99999999999",
               b"18446744073709551616", b"3", b""]


@st.composite
def mutants(draw, base: bytes) -> bytes:
    """``base`` with one damage: a byte flip, a truncation, a line deleted, duplicated or swapped,
    inserted bytes, or a number replaced by NaN, inf, a huge or out-of-range value."""
    kind = draw(st.sampled_from(["flip", "truncate", "delete", "duplicate", "swap", "insert", "number", "number"]))
    lines = base.split(b"\n")
    if kind == "flip":
        i = draw(st.integers(0, len(base) - 1))
        return base[:i] + bytes([base[i] ^ draw(st.integers(1, 255))]) + base[i + 1:]
    if kind == "truncate":
        return base[:draw(st.integers(0, len(base) - 1))]
    if kind == "insert":
        i = draw(st.integers(0, len(base)))
        return base[:i] + draw(st.binary(min_size=1, max_size=8)) + base[i:]
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        found = list(NUMBER.finditer(base))
        if not found:
            return base
        match = found[draw(st.integers(0, len(found) - 1))]
        return base[:match.start()] + draw(st.sampled_from(ODD_NUMBERS)) + base[match.end():]
    return b"\n".join(lines)


def write(folder: str, name: str, content: bytes) -> Path:
    path = Path(folder) / name
    path.write_bytes(content)
    return path


def labels_within(crf: CRF, X) -> None:
    predicted = crf.predict(X)
    assert [len(row) for row in predicted] == [len(s) for s in X]
    assert {label for row in predicted for label in row} <= set(crf.labels_)


@MUTATION
@given(data=st.data())
def test_mutated_model_loads_and_labels_or_is_refused(files, data):
    mutant = data.draw(mutants(files["model"].read_bytes()))
    with tempfile.TemporaryDirectory() as folder:
        path = write(folder, "m.crf", mutant)
        try:
            crf = CRF.load(str(path), backend="cpu")
        except ValueError as exc:
            assert str(path) in str(exc)
            return
        X = [[token[:1] for token in s] for s in PROBE] if all(len(p.commands) == 0 or max(
            c.column for c in p.commands) == 0 for p in crf.space_.patterns) else PROBE
        try:
            labels_within(crf, X)
        except ValueError as exc:  # a damaged pattern that reads a column the probe lacks
            assert "reads column" in str(exc)
        assert all(np.isfinite(w).all() for w in (crf.unigram_weights_, crf.bigram_weights_))


@MUTATION
@given(data=st.data())
def test_mutated_pattern_file_trains_or_is_refused(files, data):
    mutant = data.draw(mutants(files["pattern"].read_bytes()))
    X, y = read_conll(str(files["conll"]))
    with tempfile.TemporaryDirectory() as folder:
        path = write(folder, "p.txt", mutant)
        try:
            pattern = read_pattern_file(str(path))
        except ValueError as exc:
            assert str(path) in str(exc)
            return
        try:
            crf = CRF(pattern=pattern, rho1=0.0, max_iterations=3, backend="cpu").fit(X, y)
        except ValueError as exc:  # a valid pattern reading a column the data lacks
            assert "reads column" in str(exc)
            return
        labels_within(crf, PROBE)


@MUTATION
@given(data=st.data())
def test_mutated_conll_file_trains_and_labels_or_is_refused(files, data):
    mutant = data.draw(mutants(files["conll"].read_bytes()))
    crf = CRF.load(str(files["model"]), backend="cpu")
    with tempfile.TemporaryDirectory() as folder:
        path = write(folder, "t.txt", mutant)
        try:
            X, y = read_conll(str(path))
        except ValueError as exc:
            assert str(path) in str(exc)
            return
        try:
            labels_within(crf, X)
            fitted = CRF(pattern=PATTERN, rho1=0.0, max_iterations=3, backend="cpu").fit(X, y)
        except ValueError as exc:  # too few columns for the pattern, or nothing to train on
            assert "reads column" in str(exc) or "no training sequences" in str(exc)
            return
        labels_within(fitted, X)


# -- through the real CLI -----------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))}
    env.pop("GPU_TEXT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def cli_refuses(args: list[str], named: Path, inputs: list[Path], output: Path, message: str = "") -> str:
    before = {p: p.read_bytes() for p in inputs}
    done = run_cli(*args)
    lines = done.stderr.strip().split("\n")
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("gpu-text crf ") and str(named) in lines[0] and message in lines[0], lines[0]
    assert {p: p.read_bytes() for p in inputs} == before
    assert not output.exists() and not any(p.name.startswith(output.name) for p in output.parent.iterdir())
    return lines[0]


@pytest.fixture()
def cli_files(files, tmp_path) -> dict[str, Path]:
    lines = model_lines(files)
    nan = list(lines)
    i = section_line(nan, "unigram")
    nan[i] = weights_to("nan")(nan[i])
    written = {
        "regex": 'U:%x[0,0]\nu%t[0,0,"(a"]\n',
        "ragged": "a X B\nb Y I\n\nc O\n",
        "empty": "\n\n",
        "truncated.crf": "\n".join(lines[:section_line(lines, "bigram")]),
        "nan.crf": "\n".join(nan),
        "raw": "He prp\nran vbd\n",
        "bom_pattern": "\ufeff" + PATTERN,
        "bom_conll": "\ufeff" + CONLL,
    }
    out = {}
    for name, text in written.items():
        out[name] = tmp_path / (name if "." in name else name + ".txt")
        out[name].write_text(text, encoding="utf-8")
    out["out"] = tmp_path / "out.txt"
    return out


def test_cli_train_refuses_bad_pattern_ragged_and_empty_data(files, cli_files):
    f = cli_files
    model = f["out"].parent / "new.crf"
    cli_refuses(["crf", "train", "--backend", "cpu", "--pattern", str(f["regex"]), str(files["conll"]), str(model)],
                f["regex"], [f["regex"]], model, "line 2")
    cli_refuses(["crf", "train", "--backend", "cpu", "--pattern", str(files["pattern"]), str(f["ragged"]),
                 str(model)], f["ragged"], [f["ragged"]], model, "line 4")
    cli_refuses(["crf", "train", "--backend", "cpu", str(f["empty"]), str(model)], f["empty"], [f["empty"]], model,
                "no training sequences")


def test_cli_label_segment_eval_refuse_damaged_models(cli_files):
    f = cli_files
    for command, model, extra in (("label", "truncated.crf", [str(f["out"])]), ("segment", "nan.crf", [str(f["out"])]),
                                  ("eval", "truncated.crf", [])):
        cli_refuses(["crf", command, "--backend", "cpu", "--model", str(f[model]), str(f["raw"]), *extra],
                    f[model], [f[model], f["raw"]], f["out"], "line")


def test_cli_train_reads_bom_files(cli_files):
    f = cli_files
    done = run_cli("crf", "train", "--backend", "cpu", "--rho1", "0", "--max-iterations", "5", "--pattern",
                   str(f["bom_pattern"]), str(f["bom_conll"]), str(f["out"]))
    assert done.returncode == 0, done.stderr
    crf = CRF.load(str(f["out"]), backend="cpu")
    assert not any("\ufeff" in value for value in crf.space_.values.strings)
    assert [p.text for p in crf.space_.patterns][0] == "U0:%x[0,0]"
