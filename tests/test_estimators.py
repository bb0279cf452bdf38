"""The estimator rules (gpu_text.estimator) on every trainable class: parameters stored unchanged,
nothing learned before fit, fit returns self, clones from get_params, set_params, validation at
fit, the not-fitted error; and no learned-style names on components that are built, not learnt."""
from __future__ import annotations

import numpy as np
import pytest

from gpu_text.crf import CRF
from gpu_text.estimator import Estimator, NotFittedError
from gpu_text.segment import Dictionary, Segmenter
from gpu_text.segment.training import DictionaryTrainer
from gpu_text.tokenizer.bpe_trainer import BPETrainer
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer

TEXTS = ["the quick brown fox jumps over the lazy dog", "the dog barks and the fox runs", "我们在学习，我们喜欢学习"] * 5
CORPUS = "我们学习人工智能\n我们学习\n人工智能学习\n" * 20
CANDIDATES = ["我们", "学习", "人工", "智能", "人工智能", "我", "们", "学", "习", "人", "工", "智", "能"]
X = [["a", "b", "a"], ["b", "b"], ["a", "c"]] * 4
Y = [["A", "B", "A"], ["B", "B"], ["A", "C"]] * 4


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("estimators") / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return [path]


def fit(estimator: Estimator, corpus) -> Estimator:
    if isinstance(estimator, BPETrainer):
        return estimator.fit_texts(TEXTS)
    if isinstance(estimator, DictionaryTrainer):
        return estimator.fit(CANDIDATES, corpus)
    return estimator.fit(X, Y)


def learned(estimator: Estimator) -> dict:
    """What fit learnt, comparable with ==."""
    if isinstance(estimator, BPETrainer):
        m = estimator.model_
        return {"pieces": m.pieces, "scores": m.scores.tolist(), "u": m.u, "v": m.v}
    if isinstance(estimator, DictionaryTrainer):
        d = estimator.dictionary_
        return {"words": d.words, "freqs": d.freqs.tolist(), "steps": [r.step for r in estimator.history_]}
    return {"labels": estimator.labels_, "unigram": estimator.unigram_weights_.tolist(),
            "bigram": estimator.bigram_weights_.tolist()}


# parameters unlike the defaults, some of types __init__ must not convert (a tuple, numpy numbers)
PARAMS = {
    BPETrainer: dict(vocab_size=np.int64(259 + 40), character_coverage=1.0, max_piece_size=np.int32(8),
                     extra_tokens=("<mask>",), progress=False, backend="cpu"),
    DictionaryTrainer: dict(target_size=8, min_count=2, sub_iterations=1, keep_fraction=np.float64(0.5),
                            progress=False, backend="cpu"),
    CRF: dict(pattern="u:%x[0,0]\nb", algorithm="sgd-l1", rho1=0.01, batch_size=2, max_iterations=5, seed=3,
              backend="cpu"),
}
# a parameter value that fit must reject (and __init__ must accept), for each class
BAD = {
    BPETrainer: [("vocab_size", 100), ("character_coverage", 0.0), ("min_count", 0), ("max_piece_size", 1.5),
                 ("split", "sentence"), ("normalizer", "NFX"), ("extra_tokens", "<mask>")],
    DictionaryTrainer: [("target_size", 0), ("keep_fraction", 1.5), ("sub_iterations", -1), ("chunk_bytes", "1M")],
    CRF: [("algorithm", "newton"), ("rho1", -1.0), ("batch_size", 0), ("history", 2.0), ("learning_rate", 0)],
}
LEARNED = {BPETrainer: "model_", DictionaryTrainer: "dictionary_", CRF: "labels_"}
CLASSES = list(PARAMS)


@pytest.mark.parametrize("cls", CLASSES)
def test_init_stores_parameters_unchanged(cls):
    params = PARAMS[cls]
    e = cls(**params)
    got = e.get_params()
    assert set(got) == set(cls._param_names())
    assert all(got[name] is value for name, value in params.items())
    assert not [name for name in vars(e) if name.endswith("_")]
    assert repr(e).startswith(f"{cls.__name__}(") and all(f"{name}=" in repr(e) for name in params)
    assert repr(cls()) == f"{cls.__name__}()"


@pytest.mark.parametrize("cls", CLASSES)
def test_fit_returns_self_and_a_clone_learns_the_same(cls, corpus):
    e = cls(**PARAMS[cls])
    assert fit(e, corpus) is e
    assert getattr(e, LEARNED[cls]) is not None
    clone = type(e)(**e.get_params())
    assert not [name for name in vars(clone) if name.endswith("_")]  # a clone is unfitted
    assert learned(fit(clone, corpus)) == learned(e)
    assert learned(fit(e, corpus)) == learned(clone)  # refitting starts afresh


@pytest.mark.parametrize("cls", CLASSES)
def test_set_params(cls):
    e = cls()
    name, value = next(iter(PARAMS[cls].items()))
    assert e.set_params(**{name: value}) is e and e.get_params()[name] is value
    with pytest.raises(ValueError, match="no parameter 'colour'"):
        e.set_params(colour="blue")


@pytest.mark.parametrize("cls,name,value", [(c, n, v) for c in CLASSES for n, v in BAD[c]])
def test_bad_parameter_fails_at_fit_naming_it(cls, name, value, corpus):
    e = cls(**{**PARAMS[cls], name: value})  # accepted as given
    assert e.get_params()[name] is value
    with pytest.raises(ValueError, match=name) as error:
        fit(e, corpus)
    assert cls.__name__ in str(error.value)


@pytest.mark.parametrize("cls", CLASSES)
def test_learned_attribute_before_fit(cls):
    e = cls(**PARAMS[cls])
    with pytest.raises(NotFittedError, match=f"this {cls.__name__} is not fitted yet"):
        getattr(e, LEARNED[cls])
    assert not hasattr(e, LEARNED[cls])  # NotFittedError is an AttributeError
    with pytest.raises(AttributeError):
        e.no_such_thing  # noqa: B018 - a plain missing attribute stays a plain AttributeError


def test_crf_methods_need_a_fit(tmp_path):
    crf = CRF(**PARAMS[CRF])
    for call in (lambda: crf.predict(X), lambda: crf.predict_marginals(X), lambda: crf.save(tmp_path / "m.crf")):
        with pytest.raises(NotFittedError):
            call()


def test_crf_loaded_model_keeps_its_pattern(tmp_path):
    crf = CRF(pattern="u:%x[0,0]\nb", rho1=0.0, backend="cpu").fit(X, Y)
    crf.save(tmp_path / "m.crf")
    loaded = CRF.load(tmp_path / "m.crf", backend="cpu")
    assert loaded.get_params()["pattern"] == "u:%x[0,0]\nb" and loaded.predict(X) == crf.predict(X)


def test_bpe_trainer_tokenizer_is_ready():
    trainer = BPETrainer(**PARAMS[BPETrainer]).fit_texts(TEXTS)
    ids = trainer.tokenizer_.encode(TEXTS[:2]).ids.to_pylist()
    assert trainer.tokenizer_.decode_batch(ids) == TEXTS[:2]
    assert len(trainer.tokenizer_) == len(trainer.model_)


def test_nested_parameters():
    class Pipeline(Estimator):
        def __init__(self, trainer: BPETrainer | None = None, name: str = "p") -> None:
            self.trainer, self.name = trainer, name

    p = Pipeline(BPETrainer(vocab_size=300))
    assert p.get_params()["trainer__vocab_size"] == 300 and "trainer__vocab_size" not in p.get_params(deep=False)
    p.set_params(trainer__vocab_size=400, name="q")
    assert p.trainer.vocab_size == 400 and p.name == "q"
    with pytest.raises(ValueError, match="not an estimator"):
        p.set_params(name__x=1)


def test_built_components_use_no_learned_names():
    dictionary = Dictionary(["我们", "学习"], np.array([3, 2]), 5)
    for component in (Segmenter(dictionary), PreTokenizer(cn=dictionary), PreTokenizer(cn="char")):
        assert not [name for name in vars(component) if name.endswith("_")]
    segmenter = PreTokenizer(cn=dictionary).segmenter
    assert segmenter.dictionary is dictionary and segmenter.trie is not None
