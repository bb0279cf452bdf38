"""Bad dictionaries for the dictionary segmenter, and the memory bound of one long line.

A dictionary file of any bytes either loads (and then segments text into words whose ids lie in
the dictionary) or is refused with a ``DictionaryError`` naming the file and line — never another
exception. Through the real CLI: exit code 2, one stderr line naming the file and line, no
traceback, the inputs untouched and no output left behind.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from gpu_text.segment import Dictionary, DictionaryError, Segmenter, load_dictionary, parse_dictionary
from tests.conftest import require

hypothesis = require("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MUTATION = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])
PROBE = ["南京市长江大桥", "他是英国人Tom，编号123", "A股 C2C\u3000x", "", "\ufeff南京"]
GOOD = "南京\t751\n市 1003 n\n长江 602\n大桥\t400\n市长\t300\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=os.environ.get("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba")))
    env.pop("GPU_TEXT_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def assert_segments_within_vocabulary(dictionary: Dictionary) -> None:
    for compat in (None, "jieba"):
        result = Segmenter(dictionary, compat=compat).segment(PROBE, backend="cpu")
        ids = result.word_ids.to_numpy().values
        assert ((ids >= -1) & (ids < len(dictionary))).all()
        assert len(result.words()) == len(PROBE)


# -- a byte order mark --------------------------------------------------------------------


def test_a_bom_is_not_part_of_the_first_word(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    d = load_dictionary(path)
    assert d.words[0] == "南京" and "\ufeff" not in "".join(d.words)
    assert Segmenter(d).cut("南京市长江大桥") == ["南京", "市", "长江", "大桥"]
    assert parse_dictionary(["\ufeff" + "南京\t3"]).words == ["南京"]


# -- frequencies beyond int64, lines that are not lines ----------------------------------------


@pytest.mark.parametrize("line,message", [
    ("好\t9223372036854775808", "larger than 9223372036854775807"),
    ("好 99999999999999999999999999 n", "larger than"),
    ("好\t" + "9" * 5000, "is not an integer"),  # beyond Python's int-from-text digit limit
])
def test_frequencies_beyond_int64_are_dictionary_errors(tmp_path, line, message):
    path = tmp_path / "d.txt"
    path.write_text("坏\t1\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match=f"d.txt:2: .*{message}"):
        load_dictionary(path)
    d = load_dictionary(path, on_error="skip")
    assert d.words == ["坏"] and d.skipped[0].startswith(f"{path}:2: ")


def test_a_total_beyond_int64_is_refused_at_the_line_that_overflows(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(f"一\t{2**62}\n二\t{2**62}\n三\t1\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match="d.txt:2: the frequencies add up to more than"):
        load_dictionary(path)
    d = load_dictionary(path, on_error="skip")
    assert d.words == ["一", "三"] and d.total == 2**62 + 1
    assert_segments_within_vocabulary(d)


def test_lines_end_at_newline_only(tmp_path):
    """A lone CR or U+2028 inside a line does not start a new line: line numbers are ``\\n``'s."""
    path = tmp_path / "d.txt"
    path.write_bytes("好\t1\r\n坏\r1\u2028x\n差\tq\n".encode())
    with pytest.raises(DictionaryError, match=r"d.txt:3: frequency 'q'"):  # line 2 is "坏 1 x" (CR, U+2028 split fields)
        load_dictionary(path)
    d = load_dictionary(path, on_error="skip")
    assert d.words == ["好", "坏"] and d.skipped == [f"{path}:3: frequency 'q' is not an integer"]


# -- mutation: any bytes load or are a DictionaryError ------------------------------------------------

LINE_PIECES = st.sampled_from(["南京", "市", "\t", " ", "751", "-3", "n", "\ufeff", "\x00", "\r", "\u2028", "x",
                               "9223372036854775807", "99999999999999999999", "0", "", "１２", "1_0", "\ud800"])


@MUTATION
@given(st.lists(st.lists(LINE_PIECES, max_size=6).map("".join), max_size=8))
def test_mutated_dictionary_lines_load_or_raise_dictionary_error(lines):
    for on_error in ("raise", "skip"):
        try:
            d = parse_dictionary(lines, on_error=on_error)
        except DictionaryError as error:
            assert on_error == "raise" and str(error).startswith("<lines>:")
            continue
        assert d.total <= 2**63 - 1
        assert_segments_within_vocabulary(d)


@MUTATION
@given(st.binary(max_size=200), st.data())
def test_mutated_dictionary_files_load_or_raise_dictionary_error(tmp_path, noise, data):
    original = bytearray(GOOD.encode())
    at = data.draw(st.integers(0, len(original)))
    cut = data.draw(st.integers(0, 8))
    mutated = bytes(original[:at]) + noise + bytes(original[at + cut:])
    path = tmp_path / "m.txt"
    path.write_bytes(mutated)
    for on_error in ("raise", "skip"):
        try:
            d = load_dictionary(path, on_error=on_error)
        except DictionaryError as error:
            assert on_error == "raise" and str(error).startswith(f"{path}:")
            continue
        assert_segments_within_vocabulary(d)


# -- through the real CLI -------------------------------------------------------------------------------


@pytest.mark.parametrize("content,where", [
    ("好\t1\n坏\t9223372036854775808\n", ":2: frequency"),
    ("好\t1\n\n坏\tx\n", ":3: frequency 'x' is not an integer"),
    ("好 1 n extra words\n", ":1: expected"),
    ("\ufeff好\t-1\n", ":1: negative frequency"),
])
@pytest.mark.parametrize("compat", [None, "jieba"])
def test_cli_segment_refuses_a_bad_dictionary_in_one_line(tmp_path, content, where, compat):
    dict_path, input_path, output = tmp_path / "d.txt", tmp_path / "in.txt", tmp_path / "out.txt"
    dict_path.write_text(content, encoding="utf-8")
    input_path.write_text("南京市长江大桥\n你好\n", encoding="utf-8")
    before = dict_path.read_bytes(), input_path.read_bytes()
    result = run_cli("segment", str(input_path), str(output), "--dict", str(dict_path),
                     *(["--compat", compat] if compat else []))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("gpu-text segment: error: ") and f"{dict_path}{where}" in lines[0], lines[0]
    assert (dict_path.read_bytes(), input_path.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.txt", "in.txt"]  # no (partial) output


def test_cli_segment_skips_bad_lines_and_reads_a_bom_dictionary(tmp_path):
    dict_path, input_path, output = tmp_path / "d.txt", tmp_path / "in.txt", tmp_path / "out.txt"
    dict_path.write_bytes(b"\xef\xbb\xbf" + "南京\t751\n长江 602\n坏\t99999999999999999999\n大桥\t400\n".encode())
    input_path.write_text("南京长江大桥\n", encoding="utf-8")
    result = run_cli("segment", str(input_path), str(output), "--dict", str(dict_path), "--on-error", "skip")
    assert result.returncode == 0, result.stderr
    assert output.read_text(encoding="utf-8") == "南京 长江 大桥\n"
    assert f"{dict_path}:3:" in result.stderr


# -- one long line in bounded memory ------------------------------------------------------------


def test_a_long_line_is_segmented_in_bounded_memory():
    """A 6 MB single line of Han text: solved in windows, the lattice's memory (edges and
    per-byte scratch, about 30 bytes per input byte for the whole line) no longer scales with the
    line; what remains is the words themselves. Same words either way."""
    words = ["南京", "市", "长江", "大桥", "市长", "江大桥", "人民", "中国", "的", "了"]
    d = Dictionary(words[:8], np.arange(10, 90, 10, dtype=np.int64), 360)
    text = "".join(np.random.default_rng(0).choice(words, 1_200_000)).encode()
    peaks, results = [], []
    for window in (len(text) + 1, 256 << 10):
        segmenter = Segmenter(d, window_bytes=window)
        segmenter.segment(["南京市"], backend="cpu")  # compiled before measuring
        tracemalloc.start()
        results.append(segmenter.segment([text], backend="cpu"))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert results[0].ends.to_pylist() == results[1].ends.to_pylist()
    whole, windowed = peaks
    # measured: 160 MB whole, 64 MB in windows (the words and their offsets: 22 MB of the result)
    assert windowed < 0.5 * whole, f"whole line {whole >> 20} MB, in windows {windowed >> 20} MB"
