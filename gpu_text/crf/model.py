"""The linear-chain CRF estimator (scikit-learn-like) and its text model file.

Model file (UTF-8 text, no pickle), one item per line, strings escaped (``\\\\``, ``\\t``,
``\\n``, ``\\r``)::

    gpu_text-crf 2          (1: a model without segmentation columns, no columns/dictionary sections)
    labels <Y>              then Y lines: the labels, in weight order
    patterns <P>            then P lines: the pattern lines
    columns <C>             then C lines: segmentation columns (gpu_text.crf.segmentation.COLUMNS)
    dictionary <W>          then W lines: the dictionary words of the dict_* columns
    values <D>              then D lines: command outputs, by id (observations refer to them)
    unigram <F>             then F lines: <observation>\\t<namespace> <value ids…>\\t<Y weights>
    bigram <G>              then G lines: <observation>\\t<namespace> <value ids…>\\t<Y·Y weights, row = previous label>

Only observations with a non-zero weight are written (the model's active features); the
observation string is for people (Wapiti's key) and is ignored on loading.
"""
from __future__ import annotations

import math
import numbers
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from gpu_text.arrays import array_module, to_host
from gpu_text.backend import Backend, get_backend
from gpu_text.crf.data import bmes_to_words
from gpu_text.crf.features import Encoded, FeatureSpace, occurrences
from gpu_text.crf.optimize import Step, minimize, vector_op, sgd_l1
from gpu_text.crf.patterns import parse_patterns
from gpu_text.crf.model_file import FORMAT, FORMAT_V1, ModelReader as _ModelReader, escape as _escape
from gpu_text.crf.segmentation import SegmentationFeatures, joined_words
from gpu_text.estimator import Estimator
from gpu_text.trie.double_array import _device_key

# Wapic's Chinese word segmentation template (the seed's 10 unigram patterns and the transitions) over
# raw characters: CRF(pattern=None) on one-column data, and models saved before segmentation columns.
WAPIC_SEGMENTATION_PATTERN = CHINESE_SEGMENTATION_PATTERN = """\
U00:%x[-2,0]
U01:%x[-1,0]
U02:%x[0,0]
U03:%x[1,0]
U04:%x[2,0]
U05:%x[-1,0]/%x[0,0]
U06:%x[0,0]/%x[1,0]
U07:%x[-2,0]/%x[-1,0]
U08:%x[1,0]/%x[2,0]
U09:%x[-1,0]/%x[1,0]
B
"""

# The default for word segmentation (``crf train --segmented``, fit_segmenter): Wapic's window over
# width-folded characters (column 0), plus the character-class window (column 1); see
# gpu_text.crf.segmentation (SegmentationFeatures().pattern() builds the same text).
SEGMENTATION_PATTERN = SegmentationFeatures().pattern()

def _check_finite(x: Any, iteration: int | None) -> None:
    """Stops training that has diverged (an absurd penalty or step size), so no NaN model is written."""
    if not bool(array_module(x).isfinite(x).all()):
        when = f"at iteration {iteration}" if iteration is not None else "at the end"
        raise ValueError(f"CRF: training diverged {when} (non-finite weights); lower rho2, or learning_rate for "
                         "sgd-l1")


class CRF(Estimator):
    """A linear-chain CRF over Wapiti patterns, trained with L-BFGS (``rho1 == 0``), OWL-QN
    (``rho1 > 0``) or mini-batch SGD-L1 (``algorithm="sgd-l1"``).

    ``X`` is a list of sentences, each a list of tokens (a string, or a tuple of column strings);
    ``y`` a list of label lists. ``pattern=None`` is :data:`CHINESE_SEGMENTATION_PATTERN`.

    An estimator (:mod:`gpu_text.estimator`): :meth:`fit` learns ``labels_``, ``space_`` (the
    observations), ``unigram_weights_``, ``bigram_weights_`` and ``history_`` (one record per
    iteration); :meth:`load` gives a fitted CRF without ``history_``.

    >>> X = [["a", "b", "a"], ["b", "b"], ["a"]]
    >>> y = [["A", "B", "A"], ["B", "B"], ["A"]]
    >>> crf = CRF(pattern="u:%x[0,0]\\nb", rho1=0.0, rho2=0.01, backend="cpu").fit(X, y)
    >>> crf.predict([["b", "a"]]), crf.score(X, y)
    ([['B', 'A']], 1.0)
    >>> round(crf.predict_marginals([["a"]])[0][0]["A"], 2)
    0.98
    """

    def __init__(self, pattern: str | None = None, *, algorithm: str = "auto", rho1: float = 0.5,
                 rho2: float = 1e-4, history: int = 5, max_linesearch: int = 40, max_iterations: int = 100,
                 epsilon: float = 1e-5, stop_window: int = 5, stop_eps: float = 0.02, batch_size: int = 256,
                 learning_rate: float = 0.1, seed: int = 0, backend: str | Backend | None = None,
                 verbose: bool = False) -> None:
        self.pattern = pattern
        self.algorithm = algorithm
        self.rho1 = rho1
        self.rho2 = rho2
        self.history = history
        self.max_linesearch = max_linesearch
        self.max_iterations = max_iterations
        self.epsilon = epsilon
        self.stop_window = stop_window
        self.stop_eps = stop_eps
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.seed = seed
        self.backend = backend
        self.verbose = verbose

    # -- training -------------------------------------------------------------------------------

    def _validate_params(self) -> str:
        """Checks the parameters; returns the algorithm ``"auto"`` stands for."""
        self._require(self.pattern is None or isinstance(self.pattern, str), "pattern", "a string or None")
        self._require(self.algorithm in ("auto", "l-bfgs", "owl-qn", "sgd-l1"), "algorithm",
                      "'auto', 'l-bfgs', 'owl-qn' or 'sgd-l1'")
        for name in ("rho1", "rho2", "epsilon", "stop_eps"):
            value = getattr(self, name)
            self._require(isinstance(value, numbers.Real) and 0 <= value < math.inf, name, "a finite number >= 0")
        self._require(isinstance(self.learning_rate, numbers.Real) and 0 < self.learning_rate < math.inf,
                      "learning_rate", "a finite number > 0")
        for name, minimum in (("history", 1), ("max_linesearch", 1), ("max_iterations", 0), ("stop_window", 0),
                              ("batch_size", 1), ("seed", 0)):
            self._require_int(name, minimum)
        if self.algorithm != "auto":
            return self.algorithm
        return "owl-qn" if self.rho1 > 0 else "l-bfgs"

    def _label_ids(self, y: Sequence[Sequence[str]]) -> np.ndarray:
        index = {label: i for i, label in enumerate(self.labels_)}
        flat = [index.get(label, -1) for labels in y for label in labels]
        if -1 in flat:
            unknown = next(label for labels in y for label in labels if label not in index)
            raise ValueError(f"label {unknown!r} was not seen in training")
        return np.array(flat, np.int32)

    def fit(self, X: Sequence[Sequence], y: Sequence[Sequence[str]], X_dev: Sequence[Sequence] | None = None,
            y_dev: Sequence[Sequence[str]] | None = None) -> "CRF":
        """Learn the observations of ``X`` and train the weights; with ``X_dev``/``y_dev`` the
        per-iteration error rate (and Wapiti's error-window stopping rule) uses them, Viterbi-decoded,
        else the training data's posterior decoding; returns ``self``.

        >>> CRF(rho1=-1.0).fit([["a"]], [["A"]])
        Traceback (most recent call last):
        ...
        ValueError: CRF: rho1 must be a finite number >= 0, got -1.0
        """
        algorithm = self._validate_params()
        for name, a, b in (("X and y", X, y), ("X_dev and y_dev", X_dev or [], y_dev or [])):
            if len(a) != len(b) or any(len(s) != len(t) for s, t in zip(a, b)):
                raise ValueError(f"{name} must have the same sentences and lengths")
        backend = get_backend(self.backend)
        started = time.perf_counter()
        if not any(len(labels) for labels in y):
            raise ValueError("CRF: no training sequences (X has no tokens)")
        patterns = parse_patterns(CHINESE_SEGMENTATION_PATTERN if self.pattern is None else self.pattern)
        if not patterns:
            raise ValueError("CRF: the pattern has no u, b or * line, so there is nothing to learn")
        label_set = {label for labels in y for label in labels}
        odd = [label for label in label_set if not isinstance(label, str) or not label]
        if odd:  # sorted() and the model file need strings; an empty one would be a blank line
            raise ValueError(f"CRF: a label must be a non-empty string, got {odd[0]!r}")
        self.labels_ = sorted(label_set)
        self.space_ = FeatureSpace(patterns).fit(X)
        data = self.space_.encode(X, self._label_ids(y))
        n_labels = len(self.labels_)
        self.n_unigram_, self.n_bigram_ = self.space_.n_unigram, self.space_.n_bigram
        self.extract_seconds_ = time.perf_counter() - started
        dev = self.space_.encode(X_dev, self._label_ids(y_dev)).to(backend.xp) if X_dev is not None else None
        self.history_ = []
        size = self.n_unigram_ * n_labels + self.n_bigram_ * n_labels * n_labels
        x0 = backend.xp.zeros(size)
        errors: list[float] = []
        clock = [time.perf_counter(), time.process_time()]

        def progress(step: Step, x: Any) -> bool:
            if not math.isfinite(step.x_norm2):  # a finite x·x (the optimiser's pass took it): all weights finite
                _check_finite(x, step.iteration)
            if dev is not None:  # x's own views: on a GPU, no copy of the weights to the host and back
                predicted, _ = self._op(backend, "viterbi")(*self._split(x), dev.seq_offsets, dev.u_offsets,
                                                            dev.u_ids, dev.b_offsets, dev.b_ids)
                error = 100.0 * float((predicted != dev.labels).mean()) if dev.n_tokens else 0.0
            elif step.extra:  # the device's error count, read with the iteration's scalars
                error = 100.0 * (step.extra[0] / data.n_tokens) if data.n_tokens else 0.0
            else:  # posterior decoding of the last evaluation, which is the accepted point's
                error = self._posterior_error(backend, *last_decoding) if last_decoding else math.nan
            now, cpu = time.perf_counter(), time.process_time()
            active = step.active if step.active >= 0 else int((x != 0).sum())  # counted by the optimiser's pass
            record = {"iteration": step.iteration, "objective": step.objective, "error_percent": error,
                      "active_features": active, "seconds": now - clock[0], "cpu_seconds": cpu - clock[1],
                      "evaluations": step.evaluations}
            clock[:] = now, cpu
            self.history_.append(record)
            if self.verbose:
                print(f"  [{record['iteration']:3d}] obj={record['objective']:.6g} err={error:.3f}% "
                      f"act={record['active_features']} {record['seconds']:.2f}s", file=sys.stderr, flush=True)
            errors.append(error)
            window = errors[-self.stop_window:]
            return self.stop_window > 0 and len(window) == self.stop_window and max(window) - min(window) < self.stop_eps

        last_decoding: list = []  # (marginals, labels) of the last objective evaluation
        if algorithm == "sgd-l1":
            x = self._fit_sgd(backend, data, x0, progress)
        else:
            train = data.to(backend.xp)
            tables = self._transposed(train)
            order = backend.op("crf", "sequence_order")(train.seq_offsets)  # longest first, once
            on_device = array_module(x0) is not np

            def objective(x: Any, norm2: Any) -> tuple:
                value, gradient, marginals = self._objective(backend, train, tables, x, 1.0, norm2, order)
                if on_device and dev is None:  # the error count travels with the optimiser's one readback
                    return value, gradient, (marginals.argmax(axis=1) != train.labels).sum().reshape(1)
                last_decoding[:] = (marginals, train.labels)
                return value, gradient

            x = minimize(objective, x0, rho1=self.rho1 if algorithm == "owl-qn" else 0.0, history=self.history,
                         max_iterations=self.max_iterations, max_linesearch=self.max_linesearch,
                         epsilon=self.epsilon, callback=progress, pass_norm=True)
        _check_finite(x, None)
        self._set_weights(x)
        self.train_seconds_ = time.perf_counter() - started
        return self

    def _transposed(self, data: Encoded) -> tuple:
        return (occurrences(data.u_ids, data.u_offsets, self.n_unigram_),
                occurrences(data.b_ids, data.b_offsets, self.n_bigram_))

    def _split(self, x: Any) -> tuple[Any, Any]:
        n_labels = len(self.labels_)
        cut = self.n_unigram_ * n_labels
        return x[:cut].reshape(-1, n_labels), x[cut:].reshape(-1, n_labels, n_labels)

    def _objective(self, backend: Backend, data: Encoded, tables: tuple, x: Any, share: float,
                   norm2: Any = None, order: Any = None) -> tuple[Any, Any, Any]:
        """Σ(logZ − path score) + share·ρ2/2‖x‖², its gradient, and the marginals (for the error rate);
        ``norm2`` is ‖x‖² when the caller has it (the optimiser's pass that formed x took it), ``order``
        the sequences' order for the recursion (``sequence_order``). The value is a float for host
        vectors and a device scalar, not read, for device ones. exp(bigram) is taken once, for the
        forward-backward and the bigram gradient."""
        xp = backend.xp
        on_device = array_module(x) is not np
        unigram, bigram = self._split(x)
        exp_bigram = xp.exp(bigram)
        alpha, omega, marginals, log_z, gold = backend.op("crf", "forward_backward")(
            unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids, data.labels,
            exp_bigram=exp_bigram, order=order)
        (u_occ, u_chunks, u_features), (b_occ, b_chunks, b_features) = tables
        # the reductions write straight into the one gradient vector and add the L2 term's gradient
        # as they go: no concatenation, no extra pass over millions of weights; the tokens' own unigram
        # lists let a twin scatter in token order where that is faster (the CPU's)
        gradient = xp.empty_like(x)
        grad_u, grad_b = self._split(gradient)
        l2 = share * self.rho2
        backend.op("crf", "unigram_gradient")(marginals, data.labels, u_occ, u_chunks, u_features, unigram, l2, grad_u,
                                              data.u_offsets, data.u_ids)
        backend.op("crf", "bigram_gradient")(bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids, b_occ,
                                             b_chunks, b_features, bigram, l2, grad_b, exp_bigram=exp_bigram)
        if on_device:
            norm2 = xp.dot(x, x) if norm2 is None else norm2
            return (log_z - gold).sum() + 0.5 * share * self.rho2 * norm2, gradient, marginals
        if norm2 is None:
            norm2 = vector_op("dot")(x, x) if xp is np else float(xp.dot(x, x))
        value = float((log_z - gold).sum()) + 0.5 * share * self.rho2 * norm2
        return value, gradient, marginals

    @staticmethod
    def _posterior_error(backend: Backend, marginals: Any, labels: Any) -> float:
        """Percentage of tokens whose most probable label is not the gold one."""
        n = int(labels.size)
        return 100.0 * (backend.op("crf", "posterior_errors")(marginals, labels) / n) if n else 0.0

    def _fit_sgd(self, backend: Backend, data: Encoded, x0: Any, progress) -> Any:
        rng = np.random.default_rng(self.seed)
        order = rng.permutation(int(data.seq_offsets.size - 1))
        batches = [data.subset(order[i:i + self.batch_size]).to(backend.xp)
                   for i in range(0, order.size, self.batch_size)]
        tables = [self._transposed(b) for b in batches]
        n_tokens = max(data.n_tokens, 1)

        def batch_gradient(b: int, x: Any) -> Any:
            share = batches[b].n_tokens / n_tokens
            _, gradient, _ = self._objective(backend, batches[b], tables[b], x, share)
            return gradient / max(batches[b].n_tokens, 1)  # per-token step sizes, independent of batch size

        return sgd_l1(batch_gradient, len(batches), x0, rho1=self.rho1 / n_tokens, epochs=self.max_iterations,
                      learning_rate=self.learning_rate, seed=self.seed, callback=progress)

    def _set_weights(self, x: Any) -> None:
        unigram, bigram = self._split(to_host(x))
        self.unigram_weights_, self.bigram_weights_ = np.ascontiguousarray(unigram), np.ascontiguousarray(bigram)

    def _weights(self, backend: Backend) -> tuple[Any, Any]:
        """The weights on the backend's device, copied there once per device and weight arrays
        (weights a fit or a loader sets are new arrays, which replace the copies; an edit in place
        reaches a GPU only with new arrays). Host backends use the arrays themselves."""
        host = (self.unigram_weights_, self.bigram_weights_)
        if backend.xp is np:
            return host
        copies = vars(self).setdefault("_device_weights", {})
        key = _device_key(backend.xp)
        kept = copies.get(key)
        if kept is None or kept[0] is not host[0] or kept[1] is not host[1]:
            kept = copies[key] = (*host, backend.asarray(host[0]), backend.asarray(host[1]))
        return kept[2], kept[3]

    @staticmethod
    def _op(backend: Backend, name: str):
        return backend.op("crf", name)

    # -- inference ------------------------------------------------------------------------------

    def _encode(self, X: Sequence[Sequence], backend: Backend) -> Encoded:
        self._check_fitted("space_", "unigram_weights_", "bigram_weights_")
        return self.space_.encode(X).to(backend.xp)

    def _split_rows(self, flat: np.ndarray, X: Sequence[Sequence]) -> list:
        bounds = np.cumsum([0] + [len(s) for s in X])
        return [flat[bounds[i]:bounds[i + 1]] for i in range(len(X))]

    def predict(self, X: Sequence[Sequence], n_best: int = 1
                ) -> list[list[str]] | list[list[tuple[list[str], float]]]:
        """The Viterbi label sequence of every sentence (see the class example). With
        ``n_best=k > 1``: per sentence, its ``min(k, Y**length)`` best label sequences as
        ``(labels, score)`` pairs, best first, exact (list Viterbi, the op ``crf_decode``), where
        ``score`` is the path's log-potential, the sum of its unigram and bigram weights. Equal
        scores go to the lower last label (in :attr:`labels_` order), then the lower label before
        it, and so on backwards -- the rule of the single Viterbi path, which is always first (the
        precise order, floating point included, is in ``cpu_fallback/crf_decode.py``). An empty
        sentence has one path, ``([], 0.0)``.

        >>> crf = CRF(pattern="u:%x[0,0]\\nb", rho1=0.0, rho2=0.01, backend="cpu").fit([["a", "b"]], [["A", "B"]])
        >>> [[(labels, round(score, 2)) for labels, score in row] for row in crf.predict([["b", "a"], []], n_best=3)]
        [[(['B', 'A'], 1.73), (['A', 'B'], -0.23), (['A', 'A'], -0.75)], [([], 0.0)]]
        """
        if isinstance(n_best, bool) or not isinstance(n_best, numbers.Integral) or n_best < 1:
            raise ValueError(f"CRF: n_best must be an integer >= 1, got {n_best!r}")
        backend = get_backend(self.backend)
        data = self._encode(X, backend)
        names = np.array(self.labels_, dtype=object)
        if n_best == 1:
            labels, _ = self._op(backend, "viterbi")(*self._weights(backend), data.seq_offsets, data.u_offsets,
                                                     data.u_ids, data.b_offsets, data.b_ids)
            return [list(row) for row in self._split_rows(names[to_host(labels)], X)]
        k, n_paths = int(n_best), 1  # k beyond Y**(longest sentence) paths would only cost memory
        for _ in range(max((len(s) for s in X), default=0)):
            n_paths *= len(self.labels_)
            if n_paths >= k or n_paths == 1:
                break
        k = min(k, n_paths)
        paths, scores, counts = backend.op("crf_decode", "nbest_viterbi")(
            *self._weights(backend), data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids, k)
        paths, scores, counts = to_host(paths), to_host(scores).tolist(), to_host(counts).tolist()
        bounds = np.cumsum([0] + [len(s) for s in X]).tolist()
        return [[(names[paths[j, bounds[i]:bounds[i + 1]]].tolist(), scores[i][j]) for j in range(counts[i])]
                for i in range(len(X))]

    def predict_marginals(self, X: Sequence[Sequence], *, as_arrays: bool = False
                          ) -> list[list[dict[str, float]]] | list[np.ndarray]:
        """p(y_t = label | x) for every token, as ``{label: probability}`` dicts (see the class
        example); ``as_arrays=True``: one ``(length, Y)`` float64 array per sentence, columns in
        :attr:`labels_` order (a ``predict_proba`` for sequences).

        >>> crf = CRF(pattern="u:%x[0,0]\\nb", rho1=0.0, rho2=0.01, backend="cpu").fit([["a", "b"]], [["A", "B"]])
        >>> [p.shape for p in crf.predict_marginals([["a", "b"], []], as_arrays=True)]
        [(2, 2), (0, 2)]
        """
        backend = get_backend(self.backend)
        data = self._encode(X, backend)
        _, _, marginals, _, _ = self._op(backend, "forward_backward")(
            *self._weights(backend), data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids,
            backend.xp.zeros(0, backend.xp.int32))
        rows = self._split_rows(to_host(marginals).reshape(-1, len(self.labels_)), X)
        if as_arrays:
            return rows
        return [[dict(zip(self.labels_, p)) for p in row.tolist()] for row in rows]

    def score(self, X: Sequence[Sequence], y: Sequence[Sequence[str]]) -> float:
        """Token accuracy of :meth:`predict` (see the class example)."""
        predicted = [label for row in self.predict(X) for label in row]
        gold = [label for row in y for label in row]
        return float(np.mean([p == g for p, g in zip(predicted, gold)])) if gold else 1.0

    def segment_with_confidence(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        """The words of :meth:`segment`, each with a confidence: the product, over the word's
        characters, of the marginal probability (:meth:`predict_marginals`) of the BMES tag the
        character has in that word -- ``S`` for a one-character word, else ``B``, ``M``…, ``E``
        -- whatever tags the Viterbi path gave (an ill-formed path still makes words, see
        :func:`~gpu_text.crf.data.bmes_to_words`). A tag the model lacks counts as probability 0.
        It is a product of per-character marginals, not the probability of the whole span (that
        would need the joint), so it is at most each character's marginal and falls with length.

        >>> from gpu_text.crf.data import read_segmented_bmes
        >>> X, y = read_segmented_bmes(["南京 市长", "长江 大桥", "南京 长江"])
        >>> crf = CRF(rho1=0.0, backend="cpu").fit(X, y)
        >>> [[(w, round(c, 3)) for w, c in row] for row in crf.segment_with_confidence(["南京长江 大桥", ""])]
        [[('南京', 0.988), ('长江', 0.99), ('大桥', 0.983)], []]
        """
        self._check_fitted("space_", "unigram_weights_", "bigram_weights_")
        pieces = [t.split() for t in texts]
        flat = [p for row in pieces for p in row]
        features = getattr(self, "segmentation_", None)
        # the token view segment() decodes, so that the words are the same
        X = features.tokens(flat) if features is not None else [list(p) for p in flat]
        tags = self.predict(X)
        marginals = self.predict_marginals(X, as_arrays=True)
        column = {label: i for i, label in enumerate(self.labels_)}
        scored = []
        for piece, row, p in zip(flat, tags, marginals):
            words, at = [], 0
            for word in bmes_to_words(list(piece), row):
                tags_of_word = ["S"] if len(word) == 1 else ["B"] + ["M"] * (len(word) - 2) + ["E"]
                confidence = 1.0
                for i, tag in enumerate(tags_of_word):
                    confidence *= float(p[at + i, column[tag]]) if tag in column else 0.0
                words.append((word, confidence))
                at += len(word)
            scored.append(words)
        out, k = [], 0
        for row in pieces:
            out.append([w for chunk in scored[k:k + len(row)] for w in chunk])
            k += len(row)
        return out

    def segment(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of each raw text with a BMES-trained model (one character per token; whitespace
        separates words and is dropped). A model with ``segmentation_`` (a
        :class:`~gpu_text.crf.segmentation.SegmentationFeatures`: ``crf train --segmented``,
        :func:`~gpu_text.crf.segmenter.fit_segmenter`) gets its columns built from the text
        (folded characters, classes, dictionary); without one a token is the raw character. The
        words always spell the input's own characters.

        >>> from gpu_text.crf.data import read_segmented_bmes
        >>> X, y = read_segmented_bmes(["南京 市长", "长江 大桥", "南京 长江"])
        >>> CRF(rho1=0.0, backend="cpu").fit(X, y).segment(["南京长江 大桥"])
        [['南京', '长江', '大桥']]
        >>> from gpu_text.crf.segmenter import fit_segmenter
        >>> crf = fit_segmenter(["１２月 ３１日 ， 南京", "２０ 日"] * 3, rho1=0.0, backend="cpu")
        >>> crf.segment(["12月20日，南京", "１２月２０日，南京"])
        [['12月', '20日', '，', '南京'], ['１２月', '２０日', '，', '南京']]
        """
        pieces, codes, offsets, cut = self._segment_cuts(texts)
        bounds = np.flatnonzero(cut).tolist()
        text = codes.tobytes().decode("utf-32-le", "surrogatepass")
        words = [text[a:b] for a, b in zip(bounds, bounds[1:])]
        # words per piece, then per text
        first_word = np.searchsorted(bounds, offsets).tolist()
        out, k = [], 0
        for row in pieces:
            out.append(words[first_word[k]:first_word[k + row]])
            k += row
        return out

    def segment_text(self, texts: Sequence[str]) -> str:
        """The lines ``gpu-text crf segment`` writes for ``texts``: each text's :meth:`segment`
        words joined by single spaces, then a newline, built from the code points without a
        string per word. A subclass with its own :meth:`segment` (Wapic's rule) gets its words
        joined.

        >>> from gpu_text.crf.segmenter import fit_segmenter
        >>> crf = fit_segmenter(["南京 市长", "长江 大桥", "南京 长江"], rho1=0.0, backend="cpu")
        >>> crf.segment_text(["南京长江 大桥", "", "南京"])
        '南京 长江 大桥\\n\\n南京\\n'
        """
        if type(self).segment is not CRF.segment:
            return "".join(" ".join(row) + "\n" for row in self.segment(texts))
        pieces, codes, offsets, cut = self._segment_cuts(texts)
        text_offsets = np.zeros(len(pieces) + 1, np.int64)
        np.cumsum(pieces, out=text_offsets[1:])
        return joined_words(codes, cut[:-1], offsets[text_offsets])

    def _segment_cuts(self, texts: Sequence[str]) -> tuple[list[int], np.ndarray, np.ndarray, np.ndarray]:
        """What :meth:`segment` cuts: the number of whitespace-separated pieces of every text, the
        pieces' code points concatenated, the pieces' offsets into them, and whether a word
        starts at each position (the last entry, the end, always true)."""
        self._check_fitted("space_", "unigram_weights_", "bigram_weights_")
        split = [t.split() for t in texts]
        flat = [p for row in split for p in row]
        features = getattr(self, "segmentation_", None) or SegmentationFeatures(("char",))
        lengths = np.fromiter(map(len, flat), np.int64, len(flat))
        offsets = np.zeros(lengths.size + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # UTF-32 gives one code unit a character (a lone surrogate included, passed through)
        codes = np.frombuffer("".join(flat).encode("utf-32-le", "surrogatepass"), np.uint32)
        # the features straight from the code points, fused with the Viterbi (crf_features): no
        # string, key or id list per character
        backend = get_backend(self.backend)
        encoder = self.space_.encoder()
        values = features.value_ids(encoder, flat, codes)
        labels, _ = backend.op("crf_features", "segment_viterbi")(
            *self._weights(backend), backend.asarray(offsets), backend.asarray(values), *encoder.arrays(backend.xp))
        labels = to_host(labels)
        # bmes_to_words' rule: a word ends after E or S and before B or S (and at a piece's end)
        starts_word = np.isin(np.arange(len(self.labels_)), [self.labels_.index(t) for t in "BS" if t in self.labels_])
        ends_word = np.isin(np.arange(len(self.labels_)), [self.labels_.index(t) for t in "ES" if t in self.labels_])
        cut = np.zeros(labels.size + 1, bool)
        cut[1:-1] = starts_word[labels[1:]] | ends_word[labels[:-1]]
        cut[offsets] = True
        return [len(row) for row in split], codes, offsets, cut

    # -- model file -----------------------------------------------------------------------------

    def save(self, path: str) -> None:
        """Write the model as text (format in the module docstring).

        >>> import os, tempfile
        >>> crf = CRF(pattern="u:%x[0,0]\\nb", rho1=0.0, backend="cpu").fit([["a", "b"]], [["A", "B"]])
        >>> path = os.path.join(tempfile.mkdtemp(), "m.crf"); crf.save(path)
        >>> CRF.load(path, backend="cpu").predict([["b", "a"]])
        [['B', 'A']]
        """
        self._check_fitted("space_", "unigram_weights_", "bigram_weights_")
        space = self.space_
        features = getattr(self, "segmentation_", None)
        lines = [FORMAT if features is not None else FORMAT_V1, f"labels {len(self.labels_)}",
                 *map(_escape, self.labels_)]
        patterns = [p.text for p in space.patterns]
        lines += [f"patterns {len(patterns)}", *map(_escape, patterns)]
        if features is not None:  # so segment() rebuilds the columns the weights were trained on
            lines += [f"columns {len(features.columns)}", *features.columns]
            lines += [f"dictionary {len(features.words)}", *map(_escape, features.words)]
        lines += [f"values {space.n_values}", *map(_escape, space.values.strings[:space.n_values])]
        n_labels = len(self.labels_)
        for name, weights, parts, width in (("unigram", self.unigram_weights_, space.unigram_parts, n_labels),
                                            ("bigram", self.bigram_weights_, space.bigram_parts, n_labels ** 2)):
            flat = weights.reshape(len(parts), width)
            active = np.flatnonzero((flat != 0).any(axis=1))
            lines.append(f"{name} {active.size}")
            for i in active.tolist():
                row = [v for v in parts[i].tolist() if v >= 0]
                lines.append(f"{_escape(space.observation(row))}\t{' '.join(map(str, row))}\t"
                             + " ".join(repr(float(w)) for w in flat[i]))
        with open(path, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")

    @classmethod
    def load(cls, path: str, backend: str | Backend | None = None) -> "CRF":
        """Read a model written by :meth:`save` (see its example). Every count, reference and
        weight is checked (weights finite, value and namespace ids in range, one row per
        observation); a damaged file is a ``ValueError`` naming it and the line.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m.crf")
        >>> _ = open(path, "w").write("gpu_text-crf 1\\nlabels 1\\nA\\npatterns 1\\nB\\nvalues 0\\nunigram 0\\n"
        ...                           "bigram 1\\nB\\t0\\tnan\\n")
        >>> CRF.load(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: ...m.crf line 9: weight 'nan' is not a finite number
        """
        with open(path, "rb") as handle:
            raw = handle.read()
        reader = _ModelReader(str(path), raw)
        labels, patterns, values, tables = reader.read()
        crf = cls(pattern="\n".join(p.text for p in patterns), backend=backend)
        crf.labels_ = labels
        space = FeatureSpace(patterns)
        for value in values:
            space.values.add(value)
        space.n_values = len(space.values)
        space.set_features(tables[0][0], tables[1][0])
        crf.unigram_weights_, crf.bigram_weights_ = tables[0][1], tables[1][1]  # the file's order is the ids
        crf.space_ = space
        crf.n_unigram_, crf.n_bigram_ = space.n_unigram, space.n_bigram
        if reader.columns is not None:
            crf.segmentation_ = SegmentationFeatures(reader.columns, reader.words)
        return crf

    @classmethod
    def from_wapic(cls, path: str, backend: str | Backend | None = None) -> "CRF":
        """A fitted CRF from a Wapic ``.wac`` model: :func:`gpu_text.crf.wapic_model.load_wapic`.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m.wac")
        >>> _ = open(path, "w").write("#Patterns#1#1\\n11:u02:%x[0,0],\\n#Trie#2\\n1:A,\\n1:B,\\n#Trie#1\\n"
        ...                           "5:u02:b,\\n#Model#1\\n1=0x1p+0\\n")
        >>> CRF.from_wapic(path, backend="cpu").predict([["a", "b"]])
        [['A', 'B']]
        """
        from gpu_text.crf.wapic_model import load_wapic  # it subclasses CRF: imported when used

        return load_wapic(path, backend=backend)
