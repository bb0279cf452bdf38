"""Bad inputs through the real ``gpu-text`` command line, each in a subprocess: nothing lost (an
output never overwrites an input, a failed run leaves no partial output and an older output as it
was), nothing silently wrong (options validated, formats told by content, byte order marks
dropped, one line is ``\\n`` or ``\\r\\n``), one stderr line naming the file and exit code 2 for
every failure, and bounded memory (``--max-document-mb``, a streaming ``crf segment``)."""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_text.demo import MODEL
from tests.conftest import require

REPO = Path(__file__).resolve().parents[1]
# no compile notice: these tests want stderr to be exactly the one error line, whatever the cache
# holds (tests/test_warmup.py tests the notice; conftest.py sets it only after this is built)
ENV = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".cache" / "numba")),
       "GPU_TEXT_BACKEND": "cpu", "GPU_TEXT_COMPILE_NOTICE": "0"}
ENV.pop("GPU_TEXT_PROGRESS", None)
ENV.pop("GPU_TEXT_DEBUG", None)


def gpu_text(*args: str | Path, env: dict | None = None, stdin: bytes | None = None,
             timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *map(str, args)], input=stdin, capture_output=True,
                          env={**ENV, **(env or {})}, cwd=REPO, timeout=timeout)


def assert_fails(result: subprocess.CompletedProcess, command: str, *fragments: str) -> str:
    """Exit code 2 and exactly one stderr line ``gpu-text <command>: error: ...`` holding every fragment."""
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, err
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"gpu-text {command}: error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden temporaries included) with a digest of its content."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture(scope="module")
def crf_model(tmp_path_factory) -> Path:
    """A small BMES segmentation CRF (trained in-process, used by the subprocesses)."""
    from gpu_text.crf.data import read_segmented_bmes
    from gpu_text.crf.model import CRF

    X, y = read_segmented_bmes(["南京 市 长江 大桥", "大桥 在 南京", "长江 南京 市长"] * 3)
    path = tmp_path_factory.mktemp("crf") / "m.crf"
    CRF(rho1=0.0, backend="cpu").fit(X, y).save(str(path))
    return path


@pytest.fixture()
def work(tmp_path) -> Path:
    (tmp_path / "in.txt").write_text("南京市长江大桥\nhello world\n", encoding="utf-8")
    (tmp_path / "seg.txt").write_text("南京 市 长江 大桥\n大桥 在 南京\n", encoding="utf-8")
    (tmp_path / "dict.tsv").write_text("南京\t50\n长江\t40\n大桥\t30\n", encoding="utf-8")
    (tmp_path / "cands.txt").write_text("南京\n长江\n大桥\n", encoding="utf-8")
    (tmp_path / "pattern.txt").write_text("u:%x[0,0]\nb\n", encoding="utf-8")
    return tmp_path


# ----------------------------------------------------------------- 1. an output is never an input

SAME_FILE_CASES = {  # (command, argv template, the input the output names)
    "segment in place": ("segment", ["segment", "{d}/in.txt", "{d}/in.txt"], "in.txt"),
    "segment over its dictionary": ("segment", ["segment", "--dict", "{d}/dict.tsv", "{d}/in.txt", "{d}/dict.tsv"],
                                    "dict.tsv"),
    "segment through a symlink": ("segment", ["segment", "{d}/in.txt", "{d}/link.txt"], "in.txt"),
    "segment over a hard link": ("segment", ["segment", "{d}/in.txt", "{d}/hard.txt"], "in.txt"),
    "segment via another spelling": ("segment", ["segment", "{d}/in.txt", "{d}/./sub/../in.txt"], "in.txt"),
    "tokenize in place": ("tokenize", ["tokenize", "--model", "{model}", "{d}/in.txt", "{d}/in.txt"], "in.txt"),
    "tokenize over its model": ("tokenize", ["tokenize", "--model", "{d}/model.txt", "{d}/in.txt", "{d}/model.txt"],
                                "model.txt"),
    "tokenize .npy pair over an input": ("tokenize", ["tokenize", "--model", "{model}", "{d}/o.ids.npy", "{d}/o.npy"],
                                         "o.ids.npy"),
    "train-tokenizer": ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/in.txt"], "in.txt"),
    "train-dict over the corpus": ("train-dict", ["train-dict", "{d}/in.txt", "{d}/in.txt", "--candidates",
                                                  "{d}/cands.txt"], "in.txt"),
    "train-dict over the candidates": ("train-dict", ["train-dict", "{d}/in.txt", "{d}/cands.txt", "--candidates",
                                                      "{d}/cands.txt"], "cands.txt"),
    "crf train over its data": ("crf train", ["crf", "train", "--segmented", "{d}/seg.txt", "{d}/seg.txt"], "seg.txt"),
    "crf train over its pattern": ("crf train", ["crf", "train", "--segmented", "--pattern", "{d}/pattern.txt",
                                                 "{d}/seg.txt", "{d}/pattern.txt"], "pattern.txt"),
    "crf label": ("crf label", ["crf", "label", "--model", "{crf}", "{d}/in.txt", "{d}/link.txt"], "in.txt"),
    "crf segment over its model": ("crf segment", ["crf", "segment", "--model", "{d}/m.crf", "{d}/in.txt",
                                                   "{d}/m.crf"], "m.crf"),
}


@pytest.mark.parametrize("case", sorted(SAME_FILE_CASES))
def test_an_output_that_is_an_input_is_refused(case, work, crf_model):
    command, template, victim = SAME_FILE_CASES[case]
    (work / "link.txt").symlink_to(work / "in.txt")
    os.link(work / "in.txt", work / "hard.txt")
    (work / "sub").mkdir()
    (work / "model.txt").write_bytes(Path(MODEL).read_bytes())
    (work / "o.ids.npy").write_text("text named like an output\n", encoding="utf-8")
    (work / "m.crf").write_bytes(crf_model.read_bytes())
    before = snapshot(work)
    argv = [a.format(d=work, model=MODEL, crf=crf_model) for a in template]
    assert_fails(gpu_text(*argv), command, "the output is the input", victim)
    assert snapshot(work) == before


# ----------------------------------------------------------------- 2. every numeric option validated

BAD_NUMBERS = [  # (command, argv template, the option the message names)
    *[("segment", ["segment", flag, value, "{d}/in.txt", "{d}/o.txt"], flag)
      for flag in ("--chunk-mb", "--max-document-mb") for value in ("0", "-1", "lots", "1.5", "99999999")],
    ("tokenize", ["tokenize", "--model", "{model}", "--chunk-mb", "0", "{d}/in.txt", "{d}/o.parquet"], "--chunk-mb"),
    ("tokenize", ["tokenize", "--model", "{model}", "--max-document-mb", "-3", "{d}/in.txt", "{d}/o.parquet"],
     "--max-document-mb"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--chunk-mb", "0"], "--chunk-mb"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--vocab-size", "4294967296"],
     "--vocab-size"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--character-coverage", "nan"],
     "--character-coverage"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--character-coverage", "0"],
     "--character-coverage"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--max-piece-size", "0"],
     "--max-piece-size"),
    ("train-tokenizer", ["train-tokenizer", "{d}/in.txt", "-o", "{d}/m", "--min-count", "-1"], "--min-count"),
    ("train-dict", ["train-dict", "{d}/in.txt", "{d}/o.tsv", "--candidates", "{d}/cands.txt", "--chunk-mb", "0"],
     "--chunk-mb"),
    ("train-dict", ["train-dict", "{d}/in.txt", "{d}/o.tsv", "--candidates", "{d}/cands.txt", "--target", "0"],
     "--target"),
    ("train-dict", ["train-dict", "{d}/in.txt", "{d}/o.tsv", "--candidates", "{d}/cands.txt", "--sub-iterations",
                    "-1"], "--sub-iterations"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--rho1", "nan"], "--rho1"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--rho2", "inf"], "--rho2"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--history", "0"], "--history"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--max-linesearch", "0"], "--max-linesearch"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--max-iterations", "-1"], "--max-iterations"),
    ("crf train", ["crf", "train", "{d}/seg.txt", "{d}/m.crf", "--chunk-mb", "0"], "--chunk-mb"),
    ("crf segment", ["crf", "segment", "--model", "{d}/m.crf", "--chunk-mb", "-1", "{d}/in.txt", "{d}/o.txt"],
     "--chunk-mb"),
    ("crf label", ["crf", "label", "--model", "{d}/m.crf", "--max-document-mb", "0", "{d}/in.txt", "{d}/o.txt"],
     "--max-document-mb"),
    ("crf eval", ["crf", "eval", "--model", "{d}/m.crf", "--chunk-mb", "0", "{d}/seg.txt"], "--chunk-mb"),
]


@pytest.mark.parametrize("command, template, option", BAD_NUMBERS)
def test_bad_numbers_are_refused_by_name(command, template, option, work):
    before = snapshot(work)
    assert_fails(gpu_text(*[a.format(d=work, model=MODEL) for a in template]), command, f"argument {option}")
    assert snapshot(work) == before


# ----------------------------------------------------------------- 3. atomic outputs


def bad_second_input(work: Path) -> tuple[Path, Path]:
    good = work / "good.jsonl"
    good.write_text("".join(json.dumps({"text": f"document {i}"}) + "\n" for i in range(20_000)), encoding="utf-8")
    bad = work / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": "fine"}\n{"text": 5}\n', encoding="utf-8")
    return good, bad


@pytest.mark.parametrize("output, existing", [("o.parquet", True), ("o.parquet", False), ("o.npy", False)])
def test_tokenize_failure_leaves_no_partial_output(work, output, existing):
    good, bad = bad_second_input(work)
    if existing:
        (work / output).write_bytes(b"an older output")
    before = snapshot(work)
    result = gpu_text("tokenize", "--model", MODEL, "--chunk-mb", "1", good, bad, work / output)
    assert_fails(result, "tokenize", "bad.jsonl:3", "field 'text' is int")
    assert snapshot(work) == before  # the older output as it was, no temporary left


def test_segment_and_crf_segment_failures_leave_no_partial_output(work, crf_model):
    lines = "南京市长江大桥\n" * 30_000
    (work / "late.txt").write_bytes(lines.encode() + b"\xff\xfe broken\n")
    (work / "late.jsonl").write_bytes(b'{"text": "a"}\n' * 30_000 + b'{"text": 1}\n')
    before = snapshot(work)
    assert_fails(gpu_text("segment", "--chunk-mb", "1", work / "late.jsonl", work / "o.txt"), "segment",
                 "late.jsonl:30001")
    assert_fails(gpu_text("crf", "segment", "--model", crf_model, "--chunk-mb", "1", work / "late.txt",
                          work / "o.txt"), "crf segment", "late.txt:30001", "not UTF-8")
    assert snapshot(work) == before


def test_trainers_failures_leave_no_output(work):
    _, bad = bad_second_input(work)
    (work / "late.txt").write_bytes("南京 市\n".encode() * 100 + b"\xff\n")
    before = snapshot(work)
    assert_fails(gpu_text("train-tokenizer", work / "in.txt", bad, "-o", work / "m.model"), "train-tokenizer",
                 "bad.jsonl:3")
    assert_fails(gpu_text("train-dict", work / "in.txt", bad, work / "d.tsv", "--candidates", work / "cands.txt"),
                 "train-dict", "bad.jsonl:3")
    assert_fails(gpu_text("crf", "train", "--segmented", work / "late.txt", work / "m.crf"), "crf train",
                 "late.txt:101")
    assert snapshot(work) == before


def test_successful_outputs_replace_older_ones_whole(work):
    (work / "o.txt").write_text("old\n" * 100, encoding="utf-8")
    os.chmod(work / "in.txt", 0o644)
    assert gpu_text("segment", work / "in.txt", work / "o.txt").returncode == 0
    assert (work / "o.txt").read_text(encoding="utf-8") == "南 京 市 长 江 大 桥\nhello world\n"
    assert sorted(os.listdir(work)) == sorted(["in.txt", "seg.txt", "dict.tsv", "cands.txt", "pattern.txt", "o.txt"])
    assert (work / "o.txt").stat().st_mode & 0o777 == 0o666 & ~_umask()  # not the temporary's 0600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ----------------------------------------------------------------- 4. one line is \n or \r\n

def test_crf_segment_keeps_unicode_breaks_inside_lines(work, crf_model):
    lines = ["南京\u2028市", "长江\u0085大桥", "大桥\x0c在", "南京\x1c市长", "在\u2029南京", "", "长江\x0b大桥"]
    (work / "breaks.txt").write_bytes("\r\n".join(lines).encode() + b"\n")
    result = gpu_text("crf", "segment", "--model", crf_model, work / "breaks.txt", "-")
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    assert out.count("\n") == len(lines) == 7 and out.endswith("\n")
    assert "segmented 7 lines" in result.stderr.decode()


# ----------------------------------------------------------------- 9. formats by content

def segment_stdout(*args: str | Path) -> list[str]:
    result = gpu_text("segment", *args, "-")
    assert result.returncode == 0, result.stderr
    return result.stdout.decode("utf-8").split("\n")[:-1]


def test_formats_are_told_by_content(work):
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    records = "".join(json.dumps({"text": t}) + "\n" for t in ["南京", "长江"])
    (work / "a.jsonl.gz").write_bytes(gzip.compress(records.encode()))
    (work / "a.txt.gz").write_bytes(gzip.compress("南京\n长江\n".encode()))
    (work / "records").write_text(records, encoding="utf-8")  # no suffix: sniffed
    (work / "records.gz").write_bytes(gzip.compress(records.encode()))
    (work / "braces.md").write_text("{not json}\n南京\n", encoding="utf-8")  # a brace, but not JSON: text
    (work / "array.json").write_text(json.dumps(["南京", {"text": "长江"}, None]), encoding="utf-8")
    (work / "lines.json").write_text(records, encoding="utf-8")
    pq.write_table(pa.table({"text": ["南京", "长江"]}), work / "table.txt")  # Parquet, whatever the name
    assert segment_stdout(work / "a.jsonl.gz") == segment_stdout(work / "a.txt.gz") == ["南 京", "长 江"]
    assert segment_stdout(work / "records") == segment_stdout(work / "records.gz") == ["南 京", "长 江"]
    assert segment_stdout(work / "braces.md") == ["{ not json }", "南 京"]
    assert segment_stdout(work / "array.json") == ["南 京", "长 江", ""]
    assert segment_stdout(work / "lines.json") == ["南 京", "长 江"]
    assert segment_stdout(work / "table.txt") == ["南 京", "长 江"]


def test_format_option_overrides(work):
    (work / "records.txt").write_text('{"text": "南京"}\n', encoding="utf-8")
    assert segment_stdout("--format", "jsonl", work / "records.txt") == ["南 京"]
    assert segment_stdout("--format", "txt", work / "records.txt")[0].startswith("{")
    result = gpu_text("segment", "--format", "jsonl", "-", "-", stdin='{"text": "南京"}\n'.encode())
    assert result.returncode == 0 and result.stdout == "南 京\n".encode()
    assert_fails(gpu_text("segment", "--format", "parquet", work / "records.txt", work / "o.txt"), "segment",
                 "records.txt is not a Parquet file")
    assert_fails(gpu_text("segment", "--format", "xml", work / "records.txt", work / "o.txt"), "segment",
                 "argument --format")


def test_a_trained_model_reads_back_under_any_name(work):
    corpus = work / "corpus.txt"
    corpus.write_text("low lower lowest newer wider\n" * 20, encoding="utf-8")
    model = work / "mine.model"
    assert gpu_text("train-tokenizer", corpus, "-o", model, "--vocab-size", "280", "--character-coverage",
                    "1").returncode == 0
    result = gpu_text("tokenize", "--model", model, corpus, work / "ids.parquet")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr.decode().splitlines()[-1])["documents"] == 20


# ----------------------------------------------------------------- 11. byte order marks

def test_byte_order_marks_are_dropped(work):
    bom = "\ufeff".encode()
    (work / "bom.txt").write_bytes(bom + "南京\n".encode())
    (work / "bom.jsonl").write_bytes(bom + '{"text": "南京"}\n'.encode())
    (work / "bom.json").write_bytes(bom + '["南京"]'.encode())
    assert segment_stdout(work / "bom.txt") == segment_stdout(work / "bom.jsonl") == segment_stdout(
        work / "bom.json") == ["南 京"]
    (work / "gold.txt").write_bytes(bom + "南京 市\n".encode())
    (work / "pred.txt").write_text("南京 市\n", encoding="utf-8")
    result = gpu_text("score", work / "gold.txt", work / "pred.txt")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["f1"] == 1.0


# ----------------------------------------------------------------- 12. one line, or --debug

def test_wrong_and_non_string_columns(work):
    pa = require("pyarrow")
    pq = require("pyarrow.parquet")
    pq.write_table(pa.table({"n": [1, 2], "body": ["a", "b"]}), work / "t.parquet")
    (work / "n.jsonl").write_text('{"text": 1.5}\n', encoding="utf-8")
    (work / "n.json").write_text('[{"text": ["a"]}]', encoding="utf-8")
    (work / "cut.parquet").write_bytes((work / "t.parquet").read_bytes()[:40])
    before = snapshot(work)
    assert_fails(gpu_text("segment", work / "t.parquet", work / "o.txt"), "segment", "t.parquet: no field 'text'")
    assert_fails(gpu_text("segment", "--field", "n", work / "t.parquet", work / "o.txt"), "segment",
                 "field 'n' is int64, not a string column")
    assert_fails(gpu_text("tokenize", "--model", MODEL, work / "n.jsonl", work / "o.parquet"), "tokenize",
                 "n.jsonl:1: field 'text' is float")
    assert_fails(gpu_text("segment", work / "n.json", work / "o.txt"), "segment", "n.json: element 1",
                 "list, not a string")
    assert_fails(gpu_text("segment", work / "cut.parquet", work / "o.txt"), "segment", "cut.parquet")
    assert snapshot(work) == before


def test_an_unusable_backend_fails_before_any_output(work):
    from gpu_text.backend import cuda_unavailable_reason

    before = snapshot(work)
    if cuda_unavailable_reason() is not None:
        assert_fails(gpu_text("segment", "--backend", "cuda", work / "in.txt", work / "o.txt"), "segment",
                     "backend='cuda' was requested")
        assert_fails(gpu_text("tokenize", "--backend", "cuda", "--model", MODEL, work / "in.txt",
                              work / "o.parquet"), "tokenize", "backend='cuda'")
    bogus = {"GPU_TEXT_BACKEND": "bogus"}
    assert_fails(gpu_text("segment", work / "in.txt", work / "o.txt", env=bogus), "segment",
                 "$GPU_TEXT_BACKEND='bogus'")
    assert_fails(gpu_text("crf", "segment", "--model", work / "m.crf", work / "in.txt", work / "o.txt", env=bogus),
                 "crf segment", "$GPU_TEXT_BACKEND='bogus'")
    assert snapshot(work) == before
    info = gpu_text("info", "--json", env=bogus)  # info reports the bad value instead of failing
    assert info.returncode == 0, info.stderr
    assert "bogus" in json.loads(info.stdout)["backend"]


def test_debug_shows_the_traceback(work):
    missing = work / "missing.txt"
    assert_fails(gpu_text("segment", missing, work / "o.txt"), "segment", "missing.txt")
    for result in (gpu_text("--debug", "segment", missing, work / "o.txt"),
                   gpu_text("segment", missing, work / "o.txt", "--debug"),
                   gpu_text("segment", missing, work / "o.txt", env={"GPU_TEXT_DEBUG": "1"})):
        assert result.returncode != 0 and b"Traceback" in result.stderr and b"FileNotFoundError" in result.stderr


def test_any_unexpected_exception_is_one_line(work, monkeypatch, capsys):
    from gpu_text.cli import main
    from gpu_text.segment import segmenter

    def broken(*args, **kwargs):
        raise KeyError("surprise")

    monkeypatch.setattr(segmenter.Segmenter, "segment", broken)
    assert main(["segment", str(work / "in.txt"), str(work / "o.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in.txt: documents 1-2: KeyError: 'surprise'" in err
    assert not (work / "o.txt").exists()


# ----------------------------------------------------------------- 13. JSON records, outputs first

def test_a_json_record_longer_than_the_chunk(work):
    long = "x" * (3 << 20)
    (work / "long.jsonl").write_text(json.dumps({"text": long}) + "\n" + json.dumps({"text": "y"}) + "\n")
    (work / "long.json").write_text(json.dumps([{"text": long}, "y"]))
    for name in ("long.jsonl", "long.json"):
        result = gpu_text("tokenize", "--model", MODEL, "--chunk-mb", "1", work / name, work / "o.parquet")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stderr.decode().splitlines()[-1])["documents"] == 2


@pytest.mark.parametrize("command, template", [
    ("train-tokenizer", ["train-tokenizer", "{bad}", "-o", "{d}/nowhere/m.model"]),
    ("train-dict", ["train-dict", "{bad}", "{d}/nowhere/d.tsv", "--candidates", "{d}/cands.txt"]),
    ("crf train", ["crf", "train", "--segmented", "{bad}", "{d}/nowhere/m.crf"]),
    ("tokenize", ["tokenize", "--model", "{model}", "{bad}", "{d}"]),
    ("segment", ["segment", "{bad}", "{d}/nowhere/o.txt"]),
])
def test_output_paths_are_checked_before_any_reading(command, template, work):
    (work / "bad.jsonl").write_text('{"text": 5}\n', encoding="utf-8")  # reading it would fail
    argv = [a.format(d=work, bad=work / "bad.jsonl", model=MODEL) for a in template]
    err = assert_fails(gpu_text(*argv), command)
    assert "bad.jsonl" not in err and ("does not exist" in err or "is a directory" in err), err


# ----------------------------------------------------------------- 15. bounded documents

def test_a_document_longer_than_the_limit_is_named(work, crf_model):
    (work / "big.txt").write_bytes(b"short\n" + b"y" * (2 << 20) + b"\nshort\n")
    before = snapshot(work)
    assert_fails(gpu_text("segment", "--max-document-mb", "1", work / "big.txt", work / "o.txt"), "segment",
                 "big.txt:2: document longer than 1048576 bytes", "--max-document-mb")
    assert_fails(gpu_text("tokenize", "--model", MODEL, "--max-document-mb", "1", work / "big.txt",
                          work / "o.parquet"), "tokenize", "big.txt:2")
    assert_fails(gpu_text("crf", "segment", "--model", crf_model, "--max-document-mb", "1", work / "big.txt",
                          work / "o.txt"), "crf segment", "big.txt:2")
    assert snapshot(work) == before
    assert gpu_text("segment", "--max-document-mb", "3", work / "big.txt", work / "o.txt").returncode == 0


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_stops_at_the_limit(work):
    for command in (["segment"], ["tokenize", "--model", str(MODEL)]):
        result = gpu_text(*command, "--max-document-mb", "4", "/dev/zero", work / "o.parquet", timeout=60)
        assert_fails(result, command[0], "/dev/zero:1: document longer than 4194304 bytes")
    assert not (work / "o.parquet").exists()


# ----------------------------------------------------------------- 16. crf segment streams

def peak_rss_kib(*args: str | Path) -> int:
    """The peak resident memory of one ``gpu-text`` run, from a parent that runs nothing else."""
    probe = ("import resource, subprocess, sys; "
             "code = subprocess.run([sys.executable, '-m', 'gpu_text.cli', *sys.argv[1:]], "
             "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode; "
             "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *map(str, args)], capture_output=True, text=True, env=ENV,
                         cwd=REPO, timeout=300, check=True).stdout.split()
    assert out[0] == "0"
    return int(out[1])


def test_crf_segment_memory_is_bounded_by_the_chunk_not_the_file(work, crf_model):
    from gpu_text.crf.model import CRF

    line = "南京市长江大桥在南京长江南京市长大桥\n"
    small, large = work / "small.txt", work / "large.txt"
    small.write_text(line * 50_000, encoding="utf-8")  # 2.9 MB
    large.write_text(line * 150_000, encoding="utf-8")  # 8.6 MB
    runs = [peak_rss_kib("crf", "segment", "--model", crf_model, "--chunk-mb", "1", source, work / f"{source.stem}.out")
            for source in (small, large)]
    # 3x the file, the same peak: it is the chunk's (labelling a whole file at once took ~550 bytes
    # per character, 1.6 GB more here)
    assert runs[1] - runs[0] < 30 * 1024, runs
    texts = small.read_text(encoding="utf-8").splitlines()
    expected = "".join(" ".join(w) + "\n" for w in CRF.load(str(crf_model), backend="cpu").segment(texts))
    assert (work / "small.out").read_text(encoding="utf-8") == expected
    assert (work / "large.out").read_text(encoding="utf-8") == expected * 3
