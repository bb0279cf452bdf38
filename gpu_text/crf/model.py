"""The linear-chain CRF estimator (scikit-learn-like) and its text model file.

Model file (UTF-8 text, no pickle), one item per line, strings escaped (``\\\\``, ``\\t``,
``\\n``, ``\\r``)::

    gpu_text-crf 1
    labels <Y>              then Y lines: the labels, in weight order
    patterns <P>            then P lines: the pattern lines
    values <D>              then D lines: command outputs, by id (observations refer to them)
    unigram <F>             then F lines: <observation>\\t<namespace> <value ids…>\\t<Y weights>
    bigram <G>              then G lines: <observation>\\t<namespace> <value ids…>\\t<Y·Y weights, row = previous label>

Only observations with a non-zero weight are written (the model's active features); the
observation string is for people (Wapiti's key) and is ignored on loading.
"""
from __future__ import annotations

import math
import numbers
import re
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
from gpu_text.crf.patterns import Pattern, parse_pattern_line, parse_patterns
from gpu_text.estimator import Estimator

# Wapic's Chinese word segmentation template (the seed's 10 unigram patterns and the transitions).
CHINESE_SEGMENTATION_PATTERN = """\
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

FORMAT = "gpu_text-crf 1"
_COUNT = re.compile("[0-9]{1,12}")  # ASCII digits only: int() would take any script's


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(text[i + 1], text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


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
        clock = [time.perf_counter()]

        def progress(step: Step, x: Any) -> bool:
            _check_finite(x, step.iteration)
            self._set_weights(x)
            if dev is not None:
                predicted, _ = self._op(backend, "viterbi")(*self._weights(backend), dev.seq_offsets, dev.u_offsets,
                                                            dev.u_ids, dev.b_offsets, dev.b_ids)
                error = 100.0 * float((predicted != dev.labels).mean()) if dev.n_tokens else 0.0
            else:
                error = last_error[0]
            now = time.perf_counter()
            record = {"iteration": step.iteration, "objective": step.objective, "error_percent": error,
                      "active_features": int((x != 0).sum()), "seconds": now - clock[0],
                      "evaluations": step.evaluations}
            clock[0] = now
            self.history_.append(record)
            if self.verbose:
                print(f"  [{record['iteration']:3d}] obj={record['objective']:.6g} err={error:.3f}% "
                      f"act={record['active_features']} {record['seconds']:.2f}s", file=sys.stderr, flush=True)
            errors.append(error)
            window = errors[-self.stop_window:]
            return self.stop_window > 0 and len(window) == self.stop_window and max(window) - min(window) < self.stop_eps

        last_error = [math.nan]
        if algorithm == "sgd-l1":
            x = self._fit_sgd(backend, data, x0, progress)
        else:
            train = data.to(backend.xp)
            tables = self._transposed(train)

            def objective(x: Any) -> tuple[float, Any]:
                value, gradient, error = self._objective(backend, train, tables, x, 1.0)
                last_error[0] = error
                return value, gradient

            x = minimize(objective, x0, rho1=self.rho1 if algorithm == "owl-qn" else 0.0, history=self.history,
                         max_iterations=self.max_iterations, max_linesearch=self.max_linesearch,
                         epsilon=self.epsilon, callback=progress)
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

    def _objective(self, backend: Backend, data: Encoded, tables: tuple, x: Any, share: float
                   ) -> tuple[float, Any, float]:
        """Σ(logZ − path score) + share·ρ2/2‖x‖², its gradient, and the posterior-decoding error %."""
        xp = backend.xp
        unigram, bigram = self._split(x)
        alpha, omega, marginals, log_z, gold = backend.op("crf", "forward_backward")(
            unigram, bigram, data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids, data.labels)
        (u_occ, u_chunks, u_features), (b_occ, b_chunks, b_features) = tables
        grad_u = backend.op("crf", "unigram_gradient")(marginals, data.labels, u_occ, u_chunks, u_features)
        grad_b = backend.op("crf", "bigram_gradient")(bigram, alpha, omega, data.labels, data.b_offsets, data.b_ids,
                                                      b_occ, b_chunks, b_features)
        gradient = xp.concatenate([grad_u.ravel(), grad_b.ravel()])
        if xp is np:  # in place, one pass: the vectors hold millions of weights
            vector_op("combine")(gradient, 1.0, gradient, share * self.rho2, x)
            norm2 = vector_op("dot")(x, x)
        else:
            gradient += (share * self.rho2) * x
            norm2 = float(xp.dot(x, x))
        value = float((log_z - gold).sum()) + 0.5 * share * self.rho2 * norm2
        error = 100.0 * float((marginals.argmax(axis=1) != data.labels).mean()) if data.n_tokens else 0.0
        return value, gradient, error

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
        return backend.asarray(self.unigram_weights_), backend.asarray(self.bigram_weights_)

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

    def predict(self, X: Sequence[Sequence]) -> list[list[str]]:
        """The Viterbi label sequence of every sentence (see the class example)."""
        backend = get_backend(self.backend)
        data = self._encode(X, backend)
        labels, _ = self._op(backend, "viterbi")(*self._weights(backend), data.seq_offsets, data.u_offsets,
                                                 data.u_ids, data.b_offsets, data.b_ids)
        names = np.array(self.labels_, dtype=object)
        return [list(row) for row in self._split_rows(names[to_host(labels)], X)]

    def predict_marginals(self, X: Sequence[Sequence]) -> list[list[dict[str, float]]]:
        """p(y_t = label | x) for every token, as ``{label: probability}`` dicts (see the class example)."""
        backend = get_backend(self.backend)
        data = self._encode(X, backend)
        _, _, marginals, _, _ = self._op(backend, "forward_backward")(
            *self._weights(backend), data.seq_offsets, data.u_offsets, data.u_ids, data.b_offsets, data.b_ids,
            backend.xp.zeros(0, backend.xp.int32))
        rows = to_host(marginals).tolist()
        return [[dict(zip(self.labels_, p)) for p in row] for row in self._split_rows(np.array(rows, dtype=object)
                                                                                        if rows else np.zeros(0), X)]

    def score(self, X: Sequence[Sequence], y: Sequence[Sequence[str]]) -> float:
        """Token accuracy of :meth:`predict` (see the class example)."""
        predicted = [label for row in self.predict(X) for label in row]
        gold = [label for row in y for label in row]
        return float(np.mean([p == g for p, g in zip(predicted, gold)])) if gold else 1.0

    def segment(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of each raw text with a BMES-trained model (one character per token; whitespace
        separates words and is dropped).

        >>> from gpu_text.crf.data import read_segmented_bmes
        >>> X, y = read_segmented_bmes(["南京 市长", "长江 大桥", "南京 长江"])
        >>> CRF(rho1=0.0, backend="cpu").fit(X, y).segment(["南京长江 大桥"])
        [['南京', '长江', '大桥']]
        """
        pieces = [t.split() for t in texts]
        flat = [p for row in pieces for p in row]
        tags = self.predict([list(p) for p in flat])
        words = [bmes_to_words(list(p), t) for p, t in zip(flat, tags)]
        out, k = [], 0
        for row in pieces:
            out.append([w for chunk in words[k:k + len(row)] for w in chunk])
            k += len(row)
        return out

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
        lines = [FORMAT, f"labels {len(self.labels_)}", *map(_escape, self.labels_)]
        patterns = [p.text for p in space.patterns]
        lines += [f"patterns {len(patterns)}", *map(_escape, patterns)]
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
        return crf


class _ModelReader:
    """The lines of a model file and a cursor over its sections; errors name the file and line."""

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not a {FORMAT!r} model file (not UTF-8 at byte {exc.start})") from None
        text = text[1:] if text.startswith("\ufeff") else text
        self.lines = [line.removesuffix("\r") for line in text.split("\n")]
        self.next = 1

    def error(self, index: int, message: str) -> ValueError:
        return ValueError(f"{self.path} line {index + 1}: {message}")

    def section(self, name: str) -> tuple[int, list[str]]:
        """The index of the section's first line and its lines."""
        i = self.next
        found = self.lines[i] if i < len(self.lines) else None
        header = (found or "").split(" ")
        if len(header) != 2 or header[0] != name or not _COUNT.fullmatch(header[1]):
            what = "the end of the file" if found is None else repr(found[:40])
            raise self.error(i, f"expected the section header '{name} <count>', found {what} (truncated or damaged)")
        count = int(header[1])
        if i + 1 + count > len(self.lines):
            raise self.error(i, f"section {name!r} announces {count} lines but the file ends "
                                f"{len(self.lines) - i - 1} lines later (truncated?)")
        self.next = i + 1 + count
        return i + 1, self.lines[i + 1:i + 1 + count]

    def read(self) -> tuple[list[str], list[Pattern], list[str], list[tuple[np.ndarray, np.ndarray]]]:
        """Labels, patterns, values and the (parts, weights) of the unigram and bigram features."""
        if self.lines[0] != FORMAT:
            raise ValueError(f"{self.path} is not a {FORMAT!r} model file (line 1 is {self.lines[0][:40]!r})")
        first, labels = self.section("labels")
        labels = self.distinct(first, [_unescape(s) for s in labels], "label")
        if not labels:
            raise self.error(first - 1, "a model needs at least one label")
        first, lines = self.section("patterns")
        patterns = []
        for i, line in enumerate(lines, first):
            text = _unescape(line)
            try:
                pattern = parse_pattern_line(text) if "\n" not in text else None
            except ValueError as exc:
                raise self.error(i, str(exc)) from None
            if pattern is None:
                raise self.error(i, f"{line[:40]!r} is not a pattern")
            patterns.append(pattern)
        if not patterns:
            raise self.error(first - 1, "a model needs at least one pattern")
        first, values = self.section("values")
        values = self.distinct(first, [_unescape(s) for s in values], "value")
        space = FeatureSpace(patterns)
        widths = {int(ns): len(p.commands) for ns, p in zip(space.namespaces, patterns)}
        kinds: dict[int, str] = {}
        for ns, p in zip(space.namespaces.tolist(), patterns):
            kinds[ns] = kinds.get(ns, "") + p.kind
        tables = []
        for name, n_weights, kind in (("unigram", len(labels), "u"), ("bigram", len(labels) ** 2, "b")):
            first, rows = self.section(name)
            parts = np.full((len(rows), 1 + space._width()), -1, np.int64)
            weights = np.empty((len(rows), n_weights), np.float64)
            seen: dict[tuple[int, ...], int] = {}
            for row, line in enumerate(rows):
                i = first + row
                fields = line.split("\t")
                if len(fields) != 3:
                    raise self.error(i, f"a {name} row has 3 tab-separated fields, found {len(fields)}")
                ids = fields[1].split(" ")
                if not all(_COUNT.fullmatch(v) for v in ids):
                    raise self.error(i, f"ids {fields[1][:40]!r} are not non-negative integers")
                ids = [int(v) for v in ids]
                ns = ids[0]
                if ns not in widths or not any(k in kind + "*" for k in kinds[ns]):
                    raise self.error(i, f"namespace {ns} is not one of the model's {name} patterns")
                if len(ids) != 1 + widths[ns]:
                    raise self.error(i, f"namespace {ns} takes {widths[ns]} value id(s), found {len(ids) - 1}")
                bad = [v for v in ids[1:] if v >= len(values)]
                if bad:
                    raise self.error(i, f"value id {bad[0]} is out of range (the model has {len(values)} values)")
                if tuple(ids) in seen:
                    raise self.error(i, f"the same {name} observation as line {seen[tuple(ids)] + 1}")
                seen[tuple(ids)] = i
                parts[row, :len(ids)] = ids
                weights[row] = self.weights(i, fields[2], n_weights)
            tables.append((parts, weights.reshape(len(rows), *([len(labels)] * (1 + (kind == "b"))))))
        rest = next((i for i in range(self.next, len(self.lines)) if self.lines[i]), None)
        if rest is not None:
            raise self.error(rest, "unexpected content after the bigram section")
        return labels, patterns, values, tables

    def distinct(self, first: int, strings: list[str], what: str) -> list[str]:
        """``strings``, refused when one is empty or repeated (ids are positions in the list)."""
        seen: dict[str, int] = {}
        for i, string in enumerate(strings, first):
            if (what == "label" and not string) or string in seen:
                raise self.error(i, f"{'an empty' if not string and what == 'label' else 'a repeated'} {what} "
                                    f"{string[:40]!r}" + (f" (also line {seen[string] + 1})" if string in seen else ""))
            seen[string] = i
        return strings

    def weights(self, i: int, text: str, count: int) -> list[float]:
        """The ``count`` finite weights of line ``i``."""
        fields = text.split()
        if len(fields) != count:
            raise self.error(i, f"expected {count} weights, found {len(fields)}")
        out = []
        for field in fields:
            try:
                value = float(field)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise self.error(i, f"weight {field[:40]!r} is not a finite number")
            out.append(value)
        return out
