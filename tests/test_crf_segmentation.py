"""Segmentation columns of the CRF (gpu_text/crf/segmentation.py): the width fold, character
classes, dictionary columns, their place in the model file, and width-robust segmentation."""
from __future__ import annotations

import random
import unicodedata

import pytest

from gpu_text.crf import CRF, bmes_to_words, read_segmented_bmes
from gpu_text.crf.model import SEGMENTATION_PATTERN, WAPIC_SEGMENTATION_PATTERN
from gpu_text.crf.segmentation import DICT_CAP, DictionaryMatcher, SegmentationFeatures, character_class, fold
from gpu_text.crf.segmenter import fit_segmenter

# full-width ASCII variants (U+FF01-FF5E) <-> ASCII
TO_HALF = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
TO_FULL = {v: k for k, v in TO_HALF.items()}

TRAIN = ["１９９８年  １２月  ３１日  ，  南京  市长  发表  讲话", "ＧＤＰ  增长  ８％  。", "南京  长江  大桥",
         "新华社  记者  摄  （  图片  １  张  ）", "２０  日  上午  ，  市长  在  南京"] * 4


def test_fold_is_nfkc_on_the_full_width_forms():
    # the fold comes from the normalizer's NFKC charsmap; on the full-width forms it is NFKC itself
    for code in range(0xFF01, 0xFF5F):
        assert fold(chr(code)) == unicodedata.normalize("NFKC", chr(code)) == chr(code - 0xFEE0)
    assert fold("京") == "京" and fold("。") == "。" and fold("℃") == "°C"


def test_character_classes():
    expected = {"1": "D", "９": "D", "九": "N", "两": "N", "a": "L", "Ｚ": "L", "，": "P", ",": "P", "《": "P",
                "京": "H", "年": "U年", "月": "U月", "日": "U日", "时": "U时", "分": "U分", "万": "U万", "亿": "U亿",
                "%": "U%", "％": "U%", "℃": "U℃", "点": "U点", "ä": "O", "あ": "O"}
    assert {c: character_class(fold(c)) for c in expected} == expected


def _reference_dictionary(words: list[str], text: str) -> list[list[int]]:
    """Brute force: every substring that is a word marks its begin, end and inside characters."""
    out = [[0, 0, 0] for _ in text]
    for i in range(len(text)):
        for j in range(i + 1, len(text) + 1):
            if text[i:j] in words:
                length = min(j - i, DICT_CAP)
                out[i][0] = max(out[i][0], length)
                out[j - 1][1] = max(out[j - 1][1], length)
                for k in range(i + 1, j - 1):
                    out[k][2] = max(out[k][2], length)
    return out


def test_dictionary_columns_match_brute_force():
    rng = random.Random(7)
    alphabet = "南京市长江大桥ab１"
    words = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))) for _ in range(60)})
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(300)]
    matcher = DictionaryMatcher(words)
    folded_words = {DictionaryMatcher.fold_text(w) for w in words}
    got = matcher.columns(texts)
    for text, columns in zip(texts, got):
        assert columns.tolist() == _reference_dictionary(folded_words, DictionaryMatcher.fold_text(text))


def test_dictionary_matches_either_width():
    m = DictionaryMatcher(["ＧＤＰ", "1998年"])
    assert m.columns(["GDP１９９８年"])[0][:, 0].tolist() == [3, 0, 0, 5, 0, 0, 0, 0]


def test_features_reject_bad_columns():
    for columns in ((), ("fold", "fold"), ("width",)):
        with pytest.raises(ValueError, match="distinct names"):
            SegmentationFeatures(columns)
    with pytest.raises(ValueError, match="no dictionary column"):
        SegmentationFeatures(("fold",), words=["a"])


def test_default_pattern_reads_fold_and_class_and_keeps_wapic():
    assert SEGMENTATION_PATTERN == SegmentationFeatures().pattern()
    assert "%x[0,1]" in SEGMENTATION_PATTERN
    assert SegmentationFeatures(("char",)).pattern() == WAPIC_SEGMENTATION_PATTERN


@pytest.fixture(scope="module")
def robust():
    return fit_segmenter(TRAIN, separator="  ", rho1=0.0, rho2=1e-3, backend="cpu")


def _lengths(words: list[list[str]]) -> list[list[int]]:
    return [[len(w) for w in row] for row in words]


def test_width_swapped_twins_segment_alike(robust):
    texts = ["１９９８年１２月３１日，南京市长发表讲话", "ＧＤＰ增长８％。", "２０日上午，市长在南京（图片１张）"]
    half = [t.translate(TO_HALF) for t in texts]
    full_again = [t.translate(TO_FULL) for t in half]
    for variant in (texts, half, full_again):
        words = robust.segment(variant)
        assert ["".join(row) for row in words] == variant  # the input's own characters, in order
        assert _lengths(words) == _lengths(robust.segment(texts))
    # the training month is full-width: on half-width text the default model keeps its boundaries
    assert robust.segment(half)[0][:3] == ["1998年", "12月", "31日"]


def test_raw_character_model_is_not_width_robust(robust):
    # the contrast that makes the twin test meaningful: Wapic's pattern on raw characters sees
    # "1" and "１" as unrelated, so digits it never saw are cut differently
    X, y = read_segmented_bmes(TRAIN, "  ")
    raw = CRF(pattern=WAPIC_SEGMENTATION_PATTERN, rho1=0.0, rho2=1e-3, backend="cpu").fit(X, y)
    text = "１９９８年１２月３１日，南京市长发表讲话"
    assert _lengths(raw.segment([text])) != _lengths(raw.segment([text.translate(TO_HALF)]))
    assert _lengths(robust.segment([text])) == _lengths(robust.segment([text.translate(TO_HALF)]))


def test_model_file_keeps_columns_and_dictionary(tmp_path):
    features = SegmentationFeatures.with_dictionary(["南京市", "长江大桥", "ＧＤＰ"])
    crf = fit_segmenter(TRAIN, features, separator="  ", rho1=0.0, backend="cpu")
    path = tmp_path / "m.crf"
    crf.save(str(path))
    text = path.read_text(encoding="utf-8")
    assert text.startswith("gpu_text-crf 2\n")
    assert "\ncolumns 5\nfold\nclass\ndict_begin\ndict_end\ndict_inside\ndictionary 3\nGDP\n南京市\n长江大桥\n" in text
    loaded = CRF.load(str(path), backend="cpu")
    assert loaded.segmentation_.columns == features.columns and loaded.segmentation_.words == features.words
    texts = ["南京市长江大桥ＧＤＰ增长８％。", "GDP增长8%。", ""]
    assert loaded.segment(texts) == crf.segment(texts)


def test_old_models_load_and_behave_as_before(tmp_path):
    X, y = read_segmented_bmes(TRAIN, "  ")
    old = CRF(rho1=0.0, backend="cpu").fit(X, y)  # pattern=None: Wapic's, raw characters
    path = tmp_path / "old.crf"
    old.save(str(path))
    assert path.read_text(encoding="utf-8").startswith("gpu_text-crf 1\nlabels 4\n")  # format 1, unchanged
    loaded = CRF.load(str(path), backend="cpu")
    assert getattr(loaded, "segmentation_", None) is None
    texts = ["１９９８年１２月南京", "1998年12月南京"]
    assert loaded.segment(texts) == old.segment(texts)
    # as before: one raw character per token, no fold
    assert loaded.segment(texts) == [bmes_to_words(list(t), tags) for t, tags in
                                     zip(texts, old.predict([list(t) for t in texts]))]


@pytest.mark.parametrize("change, message", [
    ("columns 2\nfold\nclass\n", None),
    ("columns 2\nfold\nwidth\n", "columns must be distinct names"),
    ("columns 1\nfold\n", "reads column 1 but the model has 1 columns"),
    ("columns 3\nfold\nclass\ndict_begin\n", "needs dictionary words"),
])
def test_damaged_columns_section(tmp_path, robust, change, message):
    path = tmp_path / "m.crf"
    robust.save(str(path))
    text = path.read_text(encoding="utf-8")
    assert "columns 2\nfold\nclass\n" in text
    path.write_text(text.replace("columns 2\nfold\nclass\n", change), encoding="utf-8")
    if message is None:
        assert CRF.load(str(path), backend="cpu").segment(["南京"]) == robust.segment(["南京"])
    else:
        with pytest.raises(ValueError, match=message):
            CRF.load(str(path), backend="cpu")


def test_damaged_dictionary_section(tmp_path):
    crf = fit_segmenter(TRAIN, SegmentationFeatures.with_dictionary(["南京"]), separator="  ", rho1=0.0,
                        backend="cpu")
    path = tmp_path / "m.crf"
    crf.save(str(path))
    text = path.read_text(encoding="utf-8")
    for bad, message in (("dictionary 2\n南京\n南京\n", "repeated dictionary word"),
                         ("dictionary 0\n", "needs dictionary words"),
                         ("dictionary 2\n南京\n\n", "empty dictionary word")):
        path.write_text(text.replace("dictionary 1\n南京\n", bad), encoding="utf-8")
        with pytest.raises(ValueError, match=message):
            CRF.load(str(path), backend="cpu")


def test_encode_columns_matches_the_binary_search_of_every_key(robust):
    # the one-command tables of encode_columns against the plain search over all the keys
    import numpy as np

    rng = random.Random(3)
    alphabet = "１９年月日，南京市长发表讲话ＧＤＰ增８％。abc1"
    pieces = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20))) for _ in range(200)]
    space = robust.space_
    columns, offsets = robust.segmentation_.columns_of(pieces)
    got = space.encode_columns(columns, offsets)
    _, unigram, _, _ = space._key_matrices((), grow=False, columns=columns, offsets=offsets)
    position = np.minimum(np.searchsorted(space.unigram_keys, unigram), space.n_unigram - 1)
    ids = np.where((unigram >= 0) & (space.unigram_keys[position] == unigram), space.unigram_ids[position], -1)
    assert got.u_ids.tolist() == ids[ids >= 0].tolist()
    assert got.u_offsets.tolist() == [0, *np.cumsum((ids >= 0).sum(axis=1)).tolist()]
    assert got.u_ids.tolist() == space.encode(robust.segmentation_.tokens(pieces)).u_ids.tolist()
