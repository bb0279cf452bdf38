"""``gpu-text lda train | infer | topics`` on tiny corpora, and their one-line errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from gpu_text.cli import main
from gpu_text.lda.coherence import topic_coherence
from gpu_text.lda.files import load_pyldavis, phi_matrix, read_phi, read_theta, read_vocab
from gpu_text.lda.model import LDA

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".cache" / "numba"))}
FOOD = ["apple", "pie", "cake", "sugar", "flour"]
SPORT = ["goal", "match", "team", "score", "ball"]


def two_topic_corpus(path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    lines = [" ".join(rng.choice(FOOD if i % 2 else SPORT, 12)) for i in range(n)] + ["", "the the the"]
    path.write_text("".join(line + "\n" for line in lines))
    return path, lines


def run(*args):
    return main([str(a) for a in args])


def one_line_error(capsys, code, *fragments, command="gpu-text lda"):
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(command), err
    for fragment in fragments:
        assert fragment in err[0], err[0]
    return err[0]


def test_train_topics_infer(tmp_path, capsys):
    corpus, lines = two_topic_corpus(tmp_path / "c.txt")
    out = tmp_path / "model"
    assert run("lda", "train", corpus, "--topics", 2, "--iterations", 40, "--output", out, "--backend", "cpu",
               "--seed", 3, "--stop-words", stop_file(tmp_path)) == 0
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert "2 topics, 62 documents, 720 tokens, 10 words" in summary and "tokens/s" in summary
    assert sorted(os.listdir(out)) == ["model.npz", "model.phi", "model.pyldavis.npz", "model.theta", "model.vocab"]
    model = LDA.load(out / "model.npz")
    vocab = read_vocab(out / "model.vocab")
    assert vocab == model.vocabulary_ and "the" not in vocab and sorted(vocab) == sorted(FOOD + SPORT)
    np.testing.assert_allclose(phi_matrix(read_phi(out / "model.phi"), vocab), model.topic_word_, rtol=1e-8)
    theta = read_theta(out / "model.theta")
    assert theta.shape == (62, 2)
    np.testing.assert_allclose(theta, model.doc_topic_, rtol=1e-8)
    np.testing.assert_allclose(theta[-1], [0.5, 0.5])  # an empty document: alpha normalised
    assert load_pyldavis(out / "model.pyldavis.npz")["doc_lengths"].sum() == 720
    # the two topics are found: every topic's top 5 words are one group
    assert sorted(map(sorted, model.top_words(5))) == sorted([sorted(FOOD), sorted(SPORT)])

    assert run("lda", "topics", "--model", out / "model.npz", "--top", 5, "--coherence", corpus, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    expected = topic_coherence(model.top_words(5), str(corpus), "c_npmi")
    assert [t["words"] for t in shown["topics"]] == model.top_words(5)
    np.testing.assert_allclose([t["c_npmi"] for t in shown["topics"]], expected, rtol=0, atol=1e-12)
    assert run("lda", "topics", "--model", out / "model.npz", "--top", 3) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("Topic 0: ")

    new = tmp_path / "new.txt"
    new.write_text("apple pie unknownword cake\n\ngoal team\n")
    for name in ("new.theta", "new.npy"):
        assert run("lda", "infer", "--model", out / "model.npz", new, "--output", tmp_path / name,
                   "--iterations", 20, "--perplexity") == 0
        message = capsys.readouterr().err
        assert "3 documents, 5 tokens (1 outside the vocabulary" in message and "perplexity" in message
    expected = LDA.load(out / "model.npz").transform(str(new), n_iter=20)
    np.testing.assert_allclose(read_theta(tmp_path / "new.theta"), expected, rtol=1e-8)
    np.testing.assert_array_equal(np.load(tmp_path / "new.npy"), expected)


def stop_file(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("the\n")
    return path


def test_train_on_ldac_with_a_vocabulary(tmp_path, capsys):
    ldac = tmp_path / "c.ldac"
    ldac.write_text("".join("2 0:3 1:2\n" if i % 2 else "2 2:4 3:1\n" for i in range(20)))
    vocab = tmp_path / "c.tokens"
    vocab.write_text("a\nb\nc\nd\n")
    out = tmp_path / "m"
    assert run("lda", "train", ldac, "--vocabulary", vocab, "--topics", 2, "--iterations", 10, "--output", out,
               "--backend", "cpu", "--phi-top", 2) == 0
    assert read_vocab(out / "model.vocab") == ["a", "b", "c", "d"]
    assert all(len(t) == 2 for t in read_phi(out / "model.phi"))
    assert "20 documents, 100 tokens, 4 words" in capsys.readouterr().err


def test_train_on_raw_chinese(tmp_path, capsys):
    words = ["英国", "英国人", "法国", "法国人", "足球", "比赛"]
    dictionary = tmp_path / "d.dict"
    dictionary.write_text("".join(f"{w} {100 + i} n\n" for i, w in enumerate(words)), encoding="utf-8")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("英国人足球比赛\n法国人比赛\n" * 10, encoding="utf-8")
    out = tmp_path / "m"
    assert run("lda", "train", corpus, "--segment-dict", dictionary, "--topics", 2, "--iterations", 5,
               "--output", out, "--backend", "cpu") == 0
    assert set(read_vocab(out / "model.vocab")) == {"英国人", "足球", "比赛", "法国人"}
    capsys.readouterr()


def test_console_entry_point(tmp_path):
    corpus, _ = two_topic_corpus(tmp_path / "c.txt", n=10)
    result = subprocess.run([sys.executable, "-m", "gpu_text.cli", "lda", "train", str(corpus), "--topics", "2",
                             "--iterations", "3", "--output", str(tmp_path / "m"), "--backend", "cpu"],
                            capture_output=True, text=True, env=ENV, cwd=REPO, timeout=600)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "m" / "model.npz").is_file()


def test_errors(tmp_path, capsys):
    corpus, _ = two_topic_corpus(tmp_path / "c.txt", n=10)
    out = tmp_path / "out"
    base = ["lda", "train", corpus, "--topics", 2, "--iterations", 2, "--output", out, "--backend", "cpu"]
    one_line_error(capsys, run("lda", "train", tmp_path / "nope.txt", "--topics", 2, "--output", out),
                   "nope.txt: no such file")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    one_line_error(capsys, run("lda", "train", empty, "--topics", 2, "--output", out, "--backend", "cpu"),
                   "the corpus has no tokens")
    one_line_error(capsys, run(*base, "--min-count", 1000), "no tokens after pruning (--min-count 1000")
    one_line_error(capsys, run(*base[:4], 0, *base[5:]), "--topics", "not a positive integer")
    one_line_error(capsys, run(*base, "--max-df", 2), "--max-df", "not a number in (0, 1]")
    one_line_error(capsys, run(*base, "--alpha", -1), "--alpha", "not a positive number")
    one_line_error(capsys, run(*base, "--alpha", "nan"), "--alpha")
    one_line_error(capsys, run(*base, "--vocabulary", stop_file(tmp_path), "--min-count", 2),
                   "--vocabulary fixes the words")
    bad = tmp_path / "bad.ldac"
    bad.write_text("1 0:1\n2 0:1\n")
    one_line_error(capsys, run("lda", "train", bad, "--topics", 2, "--output", out, "--backend", "cpu"),
                   f"{bad}:2: expected 2 id:count pairs")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(capsys, run(*base[:8], blocker, "--backend", "cpu"), "exists and is not a directory")
    one_line_error(capsys, run(*base[:8], tmp_path / "a" / "b", "--backend", "cpu"), "parent directory")
    assert not out.exists()  # nothing written by a failed run
    assert run(*base) == 0
    capsys.readouterr()
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes((out / "model.npz").read_bytes()[:100])
    one_line_error(capsys, run("lda", "infer", "--model", damaged, corpus, "--output", tmp_path / "t.theta"),
                   str(damaged))
    one_line_error(capsys, run("lda", "topics", "--model", tmp_path / "none.npz"), "none.npz: no such file")
    one_line_error(capsys, run("lda", "topics", "--model", out / "model.npz", "--coherence", tmp_path / "x.txt"),
                   "x.txt: no such file")
    one_line_error(capsys, run("lda", "infer", "--model", out / "model.npz", corpus, "--output", corpus),
                   "the output is the input")
    assert not (tmp_path / "t.theta").exists()
