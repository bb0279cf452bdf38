"""word2vec: vocabulary and Huffman tree against gensim, the model, KeyedVectors and files, bad input."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_text.batch import TextBatch
from gpu_text.ragged import RaggedArray
from gpu_text.word2vec import KeyedVectors, Word2Vec, build_vocabulary, huffman_tree
from gpu_text.word2vec.significance import correlation_pvalue
from tests.conftest import require, shared_data

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".cache" / "numba"))}


def random_corpus(seed, n_sentences=300, vocab=60):
    rng = np.random.default_rng(seed)
    # Zipf-like: many ties among rare words, the case where tie order matters
    words = [f"w{i}" for i in range(vocab)]
    p = 1.0 / np.arange(1, vocab + 1)
    return [[words[i] for i in rng.choice(vocab, rng.integers(0, 30), p=p / p.sum())] for _ in range(n_sentences)]


@pytest.mark.parametrize("min_count,max_vocab_size", [(1, None), (3, None), (1, 25), (2, 12)])
def test_vocabulary_equals_gensims(min_count, max_vocab_size):
    gensim = require("gensim.models")
    corpus = random_corpus(min_count * 7 + (max_vocab_size or 0))
    model = gensim.Word2Vec(min_count=min_count, max_vocab_size=max_vocab_size, vector_size=4)
    model.build_vocab(corpus)
    vocab, encoded = build_vocabulary(corpus, min_count, max_vocab_size)
    assert vocab.index_to_key == model.wv.index_to_key
    assert vocab.counts.tolist() == [model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key]
    assert vocab.total_words == model.corpus_total_words
    known = [[vocab.key_to_index[w] for w in s if w in vocab.key_to_index] for s in corpus]
    assert encoded.ids.tolist() == [i for s in known for i in s]
    assert np.diff(encoded.offsets).tolist() == [len(s) for s in known if s]


def test_every_corpus_form_gives_the_same_vocabulary(tmp_path):
    corpus = random_corpus(1)
    text = "".join(" ".join(s) + "\n" for s in corpus)
    (tmp_path / "a.txt").write_text(text[:len(text) // 2].rsplit("\n", 1)[0] + "\n")
    (tmp_path / "b.txt").write_text(text[len(text[:len(text) // 2].rsplit("\n", 1)[0]) + 1:].replace(" ", " \t "))
    from_lists = build_vocabulary(corpus, 2)
    for form in ([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], TextBatch.from_strings(text.splitlines())):
        vocab, encoded = build_vocabulary(form, 2)
        assert vocab.index_to_key == from_lists[0].index_to_key
        assert encoded.ids.tolist() == from_lists[1].ids.tolist()
    ids = RaggedArray(np.array([5, 7, 5, 9, 5], np.int32), np.array([0, 3, 5]))
    vocab, encoded = build_vocabulary(ids, 1)
    assert vocab.index_to_key == [5, 9, 7] and encoded.ids.tolist() == [0, 2, 0, 1, 0]


def test_long_documents_are_cut_into_chunks():
    vocab, encoded = build_vocabulary([["a"] * 25000, ["b", "zz", "b"]], min_count=2)
    assert np.diff(encoded.offsets).tolist() == [10000, 10000, 5000, 2]


def test_huffman_tree_by_hand():
    # word2vec.c on counts 4 2 1 1: (1, 1) -> node 4 (weight 2); 2 against node 4: a tie, the inner
    # node goes first -> node 5 = (node 4, word 1); 4 against node 5: a tie again -> root =
    # (node 5, word 0); the second node taken gets bit 1, codes read from the root down
    tree = huffman_tree(np.array([4, 2, 1, 1]))
    assert [tree.code(w) for w in range(4)] == [[1], [0, 1], [0, 0, 1], [0, 0, 0]]
    assert [tree.point(w) for w in range(4)] == [[2], [2, 1], [2, 1, 0], [2, 1, 0]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_huffman_tree_with_gensims_ties_equals_gensims(seed):
    gensim = require("gensim.models")
    rng = np.random.default_rng(seed)
    counts = np.sort(rng.zipf(1.5, 3000).clip(1, 10**5))[::-1]  # many equal counts: ties everywhere
    model = gensim.Word2Vec(vector_size=4, min_count=1, hs=1, negative=0)
    model.build_vocab_from_freq({f"w{i}": int(c) for i, c in enumerate(counts)})
    vocab_counts = np.array([model.wv.get_vecattr(i, "count") for i in range(len(model.wv))])
    tree = huffman_tree(vocab_counts, ties="gensim")
    differs = huffman_tree(vocab_counts)
    assert any(differs.code(w) != tree.code(w) for w in range(len(model.wv)))  # the tie order matters here
    for w in range(len(model.wv)):
        assert tree.code(w) == model.wv.expandos["code"][w].tolist()
        assert tree.point(w) == model.wv.expandos["point"][w].tolist()


def test_huffman_tree_equals_gensims_without_ties():
    gensim = require("gensim.models")
    rng = np.random.default_rng(0)
    counts = sorted(set(rng.integers(5, 10**6, 400).tolist()), reverse=True)
    model = gensim.Word2Vec(vector_size=4, min_count=1, hs=1, negative=0)
    model.build_vocab_from_freq({f"w{i}": c for i, c in enumerate(counts)})
    tree = huffman_tree(np.array([model.wv.get_vecattr(i, "count") for i in range(len(model.wv))]))
    for w in range(len(model.wv)):
        assert tree.code(w) == model.wv.expandos["code"][w].tolist()
        assert tree.point(w) == model.wv.expandos["point"][w].tolist()


def test_deterministic_runs_do_not_depend_on_threads_or_batch_words():
    import numba

    corpus = random_corpus(2)
    results = []
    for threads, batch_words in ((1, 10000), (2, 7)):
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        model = Word2Vec(vector_size=8, min_count=1, epochs=2, sg=1, hs=1, negative=2, deterministic=True,
                         batch_words=batch_words, backend="cpu", compute_loss=True).fit(corpus)
        results.append((model.wv_.vectors.copy(), model.loss_))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(results[0][0], results[1][0])
    assert results[0][1] == results[1][1]


def test_parameters_are_validated_in_fit():
    model = Word2Vec(hs=0, negative=0)
    assert model.get_params()["hs"] == 0  # stored unchanged
    with pytest.raises(ValueError, match="hs must be 1 when negative is 0"):
        model.fit([["a"]])
    with pytest.raises(ValueError, match="vector_size must be an integer >= 1"):
        Word2Vec(vector_size=0).fit([["a"]])


def test_keyed_vectors_files_round_trip_with_gensim(tmp_path):
    gensim_kv = require("gensim.models.keyedvectors")
    rng = np.random.default_rng(3)
    ours = KeyedVectors(["the", "día", "x'y"], rng.standard_normal((3, 5)).astype(np.float32))
    for name, binary in (("v.txt", False), ("v.bin", True)):
        ours.save(tmp_path / name)
        theirs = gensim_kv.KeyedVectors.load_word2vec_format(str(tmp_path / name), binary=binary)
        assert theirs.index_to_key == ours.index_to_key
        np.testing.assert_array_equal(theirs.vectors, ours.vectors)
        theirs.save_word2vec_format(str(tmp_path / ("g" + name)), binary=binary)
        back = KeyedVectors.load(tmp_path / ("g" + name))
        assert back.index_to_key == ours.index_to_key
        np.testing.assert_allclose(back.vectors, ours.vectors, rtol=1e-6)
    ours.save(tmp_path / "v.npy")
    np.testing.assert_array_equal(KeyedVectors.load(tmp_path / "v.npy").vectors, ours.vectors)


def test_evaluations_equal_gensims_on_the_same_vectors(tmp_path):
    gensim_kv = require("gensim.models.keyedvectors")
    words = ["king", "queen", "man", "woman", "paris", "france", "rome", "italy", "King", "apple"]
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((len(words), 6)).astype(np.float32)
    theirs = gensim_kv.KeyedVectors(6)
    theirs.add_vectors(words, vectors)
    ours = KeyedVectors(words, vectors)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("# c\nking\tqueen\t8\nman\twoman\t7\nparis\tfrance\t6\nrome\tapple\t1\nkING\tman\t5\n"
                     "zz\tman\t3\nbad line\n")
    questions = tmp_path / "q.txt"
    questions.write_text(": capitals\nparis france rome italy\nrome italy paris france\nparis france zz italy\n"
                         ": family\nman woman king queen\nwoman man queen king\nking queen man woman\n")
    pearson, spearman, oov = theirs.evaluate_word_pairs(str(pairs))
    score = ours.evaluate_word_pairs(pairs)
    assert score.pearson == pytest.approx(pearson[0], abs=1e-6)
    assert score.spearman == pytest.approx(spearman[0], abs=1e-6)
    assert score.oov_ratio == pytest.approx(oov)
    assert score.pearson_pvalue == pytest.approx(pearson[1], rel=1e-6)  # r itself agrees to 1e-6
    assert score.spearman_pvalue == pytest.approx(spearman[1], rel=1e-6)
    accuracy, sections = theirs.evaluate_word_analogies(str(questions))
    our_accuracy, our_sections = ours.evaluate_word_analogies(questions)
    assert our_accuracy == accuracy
    assert [(s["section"], s["correct"], s["incorrect"]) for s in our_sections] == \
        [(s["section"], s["correct"], s["incorrect"]) for s in sections]
    assert [w for w, _ in ours.most_similar(positive=["king", "woman"], negative=["man"], topn=4)] == \
        [w for w, _ in theirs.most_similar(positive=["king", "woman"], negative=["man"], topn=4)]


@pytest.mark.parametrize("n", [3, 4, 10, 353, 999])
def test_correlation_pvalues_equal_scipys(n):
    stats = require("scipy.stats")
    rng = np.random.default_rng(n)
    for strength in (0.0, 0.1, 0.5, 0.95):
        x = rng.standard_normal(n)
        y = strength * x + rng.standard_normal(n)
        r, p = stats.pearsonr(x, y)
        assert correlation_pvalue(float(r), n) == pytest.approx(float(p), rel=1e-9, abs=1e-300)
    assert correlation_pvalue(1.0, n) == 0.0 and correlation_pvalue(0.0, n) == pytest.approx(1.0)


def test_quality_close_to_gensim_on_a_slice_of_the_bible():
    gensim = require("gensim.models")
    path = shared_data("en-kjv/kjv_verses.txt")
    lines = [line.split(" ", 1)[1].lower().split() for line in path.read_text().splitlines()[:12000]]
    ours = Word2Vec(vector_size=32, min_count=5, epochs=3, backend="cpu").fit(lines)
    theirs = gensim.Word2Vec(lines, vector_size=32, min_count=5, epochs=3, hs=1, negative=0, workers=2, seed=1)
    common = ["god", "lord", "king", "son", "land", "house", "people", "day"]
    overlap = []
    for word in common:
        a = {w for w, _ in ours.wv_.most_similar(word, topn=20)}
        b = {w for w, _ in theirs.wv.most_similar(word, topn=20)}
        overlap.append(len(a & b) / 20)
    assert np.mean(overlap) > 0.25, overlap


# -- bad input ------------------------------------------------------------------------------------

def test_empty_corpus_and_no_word_above_min_count(tmp_path):
    with pytest.raises(ValueError, match="the corpus is empty"):
        Word2Vec(backend="cpu").fit([[], []])
    (tmp_path / "e.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="the corpus is empty"):
        Word2Vec(backend="cpu").fit(str(tmp_path / "e.txt"))
    with pytest.raises(ValueError, match=r"min_count=5 times \(the most frequent, 'a', occurs 2 times\)"):
        Word2Vec(backend="cpu").fit([["a", "b", "a"]])


def test_invalid_utf8_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good words\nmore words\nbad \xff\xfe here\n")
    with pytest.raises(ValueError, match=rf"{path}:3: not UTF-8"):
        build_vocabulary(str(path), 1)


def test_one_enormous_line(tmp_path):
    path = tmp_path / "big.txt"
    words = np.random.default_rng(0).integers(0, 50, 60000)
    path.write_text(" ".join(f"w{w}" for w in words))
    model = Word2Vec(vector_size=8, min_count=1, epochs=1, backend="cpu").fit(str(path))
    assert len(model.wv_) == 50 and model.history_[0]["words"] > 0


def test_too_large_alpha_stops_with_a_clear_error():
    corpus = random_corpus(3) * 3
    with pytest.raises(ValueError, match="training diverged in epoch 1.*alpha=1e\\+30 is too large"):
        Word2Vec(vector_size=8, min_count=1, alpha=1e30, epochs=2, sample=0, sg=1, negative=3,
                 backend="cpu").fit(corpus)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *map(str, args)], capture_output=True, text=True,
                          env=ENV, cwd=REPO, timeout=600)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("gpu-text word2vec")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("content,fragments", [
    (b"", ["the corpus is empty"]),
    (b"a b c\n", ["min_count=5", "'c'"]),
    (b"fine line\nbad \xc0\x80 line\n", [":2: not UTF-8"]),
])
def test_cli_bad_corpora(tmp_path, content, fragments):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(content)
    output = tmp_path / "v.txt"
    result = run_cli("word2vec", "train", corpus, "--output", output, "--backend", "cpu")
    assert_one_line_error(result, *fragments)
    if ":2:" in fragments[0]:
        assert str(corpus) in result.stderr
    assert corpus.read_bytes() == content
    assert not output.exists() and list(tmp_path.iterdir()) == [corpus]


def test_cli_diverging_alpha_leaves_no_output(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(" ".join(s) + "\n" for s in random_corpus(3) * 3))
    output = tmp_path / "v.bin"
    result = run_cli("word2vec", "train", corpus, "--output", output, "--backend", "cpu", "--min-count", "1",
                     "--alpha", "1e30", "--sample", "0", "--skipgram", "--negative", "3", "--size", "8")
    assert_one_line_error(result, "training diverged")
    assert list(tmp_path.iterdir()) == [corpus]


def test_cli_train_similar_eval(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(" ".join(s) + "\n" for s in random_corpus(4)))
    output = tmp_path / "v.bin"
    result = run_cli("word2vec", "train", corpus, "--output", output, "--backend", "cpu", "--min-count", "1",
                     "--size", "8", "--epochs", "2")
    assert result.returncode == 0, result.stderr
    assert len(KeyedVectors.load(output)) == 60
    similar = run_cli("word2vec", "similar", output, "w0", "--topn", "3")
    assert similar.returncode == 0 and len(similar.stdout.splitlines()) == 3
    assert_one_line_error(run_cli("word2vec", "similar", output, "nope"), "'nope' is not in the vocabulary")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("w0\tw1\t3\nw1\tw2\t2\nw0\tw3\t1\n")
    evaluated = run_cli("word2vec", "eval", output, "--similarity", pairs)
    assert evaluated.returncode == 0 and '"spearman"' in evaluated.stdout
    damaged = tmp_path / "damaged.bin"
    damaged.write_bytes(output.read_bytes()[:40])
    assert_one_line_error(run_cli("word2vec", "similar", damaged, "w0"), str(damaged))


# -- raw Chinese text segmented on the fly ------------------------------------------------------------

SAMPLE = REPO / "gpu_text" / "data" / "samples" / "zh-hongloumeng.txt"
WORDS = ["宝玉", "黛玉", "贾母", "王夫人", "凤姐", "袭人", "说道", "一个", "什么", "我们", "你们", "他们", "如今",
         "太太", "姑娘", "丫头", "只见", "听了", "不知", "出来", "笑道", "老太太", "二爷", "这里", "今日"]


def tiny_dictionary(tmp_path):
    path = tmp_path / "tiny.dict"
    path.write_text("".join(f"{w} {100 + 10 * i} n\n" for i, w in enumerate(WORDS)), encoding="utf-8")
    return path


def sample_lines(tmp_path, n=400):
    lines = SAMPLE.read_text(encoding="utf-8").split("\n")[:n]
    path = tmp_path / "hlm.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


def test_segmenting_on_the_fly_equals_training_on_the_segmented_words(tmp_path):
    from gpu_text.segment import Segmenter, load_dictionary

    segmenter = Segmenter(load_dictionary(tiny_dictionary(tmp_path)))
    path, lines = sample_lines(tmp_path)
    params = dict(vector_size=16, min_count=2, epochs=2, deterministic=True, backend="cpu")
    model = Word2Vec(**params, segment=segmenter)
    assert model.get_params()["segment"] is segmenter  # stored unchanged
    on_the_fly = model.fit(str(path))
    words = segmenter.segment(lines, backend="cpu").words()
    first = Word2Vec(**params).fit(words)
    assert "宝玉" in on_the_fly.wv_ and "，" in on_the_fly.wv_
    assert on_the_fly.wv_.index_to_key == first.wv_.index_to_key
    assert on_the_fly.vocab_.total_words == sum(map(len, words))
    np.testing.assert_array_equal(on_the_fly.wv_.vectors, first.wv_.vectors)
    batch = Word2Vec(**params, segment=segmenter).fit(TextBatch.from_strings(lines))
    np.testing.assert_array_equal(batch.wv_.vectors, first.wv_.vectors)


def test_segment_must_be_a_segmenter_and_the_corpus_raw_text(tmp_path):
    with pytest.raises(ValueError, match="segment must be None or a Segmenter"):
        Word2Vec(segment="jieba", backend="cpu").fit([["a"]])
    from gpu_text.segment import Segmenter

    with pytest.raises(TypeError, match="with segment, corpus must be a path"):
        Word2Vec(segment=Segmenter(), backend="cpu").fit([["已", "分词"]])


def test_cli_trains_on_raw_chinese_with_a_segmentation_dictionary(tmp_path):
    path, _ = sample_lines(tmp_path)
    output = tmp_path / "v.txt"
    result = run_cli("word2vec", "train", path, "--segment-dict", tiny_dictionary(tmp_path), "--output", output,
                     "--backend", "cpu", "--size", "16", "--epochs", "1", "--min-count", "2")
    assert result.returncode == 0, result.stderr
    vectors = KeyedVectors.load(output)
    assert "宝玉" in vectors and "贾母" in vectors
    missing = tmp_path / "missing.dict"
    result = run_cli("word2vec", "train", path, "--segment-dict", missing, "--output", tmp_path / "w.txt",
                     "--backend", "cpu")
    assert_one_line_error(result, str(missing))
    bad = tmp_path / "bad.dict"
    bad.write_text("宝玉 100\n黛玉 many\n", encoding="utf-8")
    result = run_cli("word2vec", "train", path, "--segment-dict", bad, "--output", tmp_path / "w.txt",
                     "--backend", "cpu")
    assert_one_line_error(result, f"{bad}:2")
    assert not (tmp_path / "w.txt").exists()


@pytest.mark.parametrize("sg,cbow_mean", [(0, 1), (0, 0), (1, 1)])
def test_compat_gensim_makes_gensims_updates(sg, cbow_mean):
    """With no random draw left (sample 0, window 1, a constant alpha, one worker) both make the same
    updates from the same initial vectors: compat="gensim" reproduces gensim's model."""
    gensim = require("gensim.models")
    corpus = random_corpus(11, n_sentences=200)
    settings = dict(vector_size=16, window=1, min_count=2, sample=0, sg=sg, hs=1, negative=0, cbow_mean=cbow_mean,
                    alpha=0.025, min_alpha=0.025, epochs=1, seed=5)
    theirs = gensim.Word2Vec(corpus, workers=1, **settings)
    ours = Word2Vec(**settings, compat="gensim", deterministic=True, backend="cpu").fit(corpus)
    assert ours.wv_.index_to_key == list(theirs.wv.index_to_key)
    moved = np.abs(theirs.wv.vectors).max()
    # float32 dot products summed in another order (BLAS sdot there) are all that differs
    np.testing.assert_allclose(np.asarray(ours.wv_.vectors), theirs.wv.vectors, atol=1e-4 * moved, rtol=0)
    default = Word2Vec(**settings, deterministic=True, backend="cpu").fit(corpus)  # the seed's choices differ
    assert np.abs(np.asarray(default.wv_.vectors) - theirs.wv.vectors).max() > 1e-2 * moved


def test_cli_trains_cbow_unless_told_skipgram():
    from gpu_text.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["word2vec", "train", "c.txt", "--output", "v.bin"]).skipgram is False
    assert parse(["word2vec", "train", "c.txt", "--output", "v.bin", "--cbow"]).skipgram is False
    assert parse(["word2vec", "train", "c.txt", "--output", "v.bin", "--skipgram"]).skipgram is True
