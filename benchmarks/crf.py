"""CRF training: seconds per L-BFGS iteration of gpu_text (Numba, CUDA) vs python-crfsuite on the
same observations (the default Chinese pattern expanded by gpu_text, handed to CRFsuite as
attribute strings; CRFsuite adds its label transitions, as the pattern's ``B`` does) and the same
People's Daily characters; plus token accuracy and word F1 of each on the next lines.

CRFsuite's L2 term is c2·‖w‖², ours ρ2/2·‖w‖², so c2 = ρ2/2. A shared machine's load drifts, so
the trainings are interleaved: ``GPU_TEXT_CRF_ROUNDS`` rounds (default 2; 1 with ``--quick``) of
CRFsuite then gpu_text[cpu], and each round's ratios of median seconds per iteration are in the
notes (the table's medians are over every round), measured three ways: wall clock against wall
clock (CRFsuite's iterations timed from its log messages as they arrive: an iteration ends where
CRFsuite logs its header), which is the table's; CPU time against CPU time (the process's, all
threads; it leaves out the time a loaded machine keeps the process waiting); and our wall clock
against the figure CRFsuite itself logs, which is its process CPU clock (``clock()``), so on a
loaded machine that ratio counts the waiting against gpu_text alone. The load average before
each round is in the notes too. ``GPU_TEXT_CRF_ITERATIONS`` sets the iterations
(default 20; 5 with ``--quick``), ``GPU_TEXT_CRF_LINES`` the training lines (default 4000; 1000
with ``--quick``; 0 = the whole month, 1.84M characters, for the GPU target of 10 ms per
iteration). Without python-crfsuite (the GPU machine) only gpu_text's rows are measured.
"""
from __future__ import annotations

import os
import statistics
import time

import numba
import numpy as np

from benchmarks.corpora import SHARED
from benchmarks.harness import Config, Measurement, training_curve
from gpu_text.backend import cuda_unavailable_reason
from gpu_text.crf import CRF, read_segmented_bmes
from gpu_text.crf.data import bmes_to_words
from gpu_text.metrics import score_words

PEER = "python-crfsuite lbfgs"


def _lines(quick: bool) -> tuple[list[str], list[str]]:
    path = SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    n = int(os.environ.get("GPU_TEXT_CRF_LINES", 1000 if quick else 4000)) or int(len(lines) * 0.9)
    return lines[:n], lines[n:n + max(n // 4, 1)]


def _peer_iterations(marks: list[tuple[str, float, float]]) -> tuple[list[float], list[float]]:
    """(wall, CPU) seconds of each CRFsuite iteration from its log messages with the clocks at their
    arrival: L-BFGS starts after the options block (its last line is ``linesearch.max_iterations``,
    then an empty line) and iteration k ends where ``***** Iteration #k *****`` is logged.

    >>> _peer_iterations([("linesearch.max_iterations: 20\\n", 0.0, 0.0), ("\\n", 1.0, 0.5),
    ...                   ("***** Iteration #1 *****\\n", 3.0, 1.5), ("***** Iteration #2 *****\\n", 4.5, 2.0)])
    ([2.0, 1.5], [1.0, 0.5])
    """
    start = next(i for i, (m, _, _) in enumerate(marks) if m.startswith("linesearch.max_iterations")) + 1
    ends = [marks[start]] + [mark for mark in marks[start:] if mark[0].startswith("***** Iteration #")]
    return ([b[1] - a[1] for a, b in zip(ends, ends[1:])], [b[2] - a[2] for a, b in zip(ends, ends[1:])])


class _Peer:
    """python-crfsuite trained on gpu_text's observations as attribute strings."""

    def __init__(self, X, y, iterations: int) -> None:
        import pycrfsuite

        self.pycrfsuite = pycrfsuite
        probe = CRF(rho1=0.0, rho2=1e-4, max_iterations=1, backend="cpu").fit(X[:1], y[:1])
        self.space = probe.space_.__class__(probe.space_.patterns).fit(X)
        self.strings = np.array([self.space.observation([v for v in row if v >= 0])
                                 for row in self.space.unigram_parts.tolist()], dtype=object)
        self.X, self.y, self.iterations = X, y, iterations

    def items(self, X) -> list[list[list[str]]]:
        encoded = self.space.encode(X)
        u = encoded.u_offsets
        return [[list(self.strings[encoded.u_ids[u[t]:u[t + 1]]])
                 for t in range(encoded.seq_offsets[s], encoded.seq_offsets[s + 1])] for s in range(len(X))]

    def train(self) -> tuple[list[float], list[float], list[float], float, int]:
        """(seconds of each iteration as CRFsuite reports them (its CPU clock), wall and CPU seconds
        of each iteration as measured here, wall seconds of the whole training, evaluations)."""
        marks: list[tuple[str, float, float]] = []

        class Timed(self.pycrfsuite.Trainer):
            def message(self, message: str) -> None:
                marks.append((message, time.perf_counter(), time.process_time()))
                super().message(message)

        trainer = Timed(verbose=False)
        for items, labels in zip(self.items(self.X), self.y):
            trainer.append(items, labels)
        trainer.set_params({"c1": 0.0, "c2": 0.5e-4, "max_iterations": self.iterations,
                            "feature.possible_transitions": True, "feature.possible_states": True,
                            "num_memories": 5})
        started = time.perf_counter()
        trainer.train("/tmp/gpu_text_bench.crfsuite")
        wall = time.perf_counter() - started
        log = trainer.logparser.iterations
        # CRFsuite's loss, -log-likelihood + c2·‖w‖² with c2 = ρ2/2: our objective, for the report's curves
        self.losses = [(it["num"], it["loss"]) for it in log]
        walls, cpus = _peer_iterations(marks)
        return [it["time"] for it in log], walls, cpus, wall, sum(it.get("linesearch_trials", 1) for it in log)

    def predict(self, X) -> list[list[str]]:
        tagger = self.pycrfsuite.Tagger()
        tagger.open("/tmp/gpu_text_bench.crfsuite")
        return [tagger.tag(items) for items in self.items(X)]


def _train(X, y, iterations: int, backend: str) -> CRF:
    return CRF(rho1=0.0, rho2=1e-4, max_iterations=iterations, stop_window=0, epsilon=0.0, backend=backend).fit(X, y)


def run(config: Config) -> list[Measurement]:
    train_lines, test_lines = _lines(config.quick)
    X, y = read_segmented_bmes(train_lines, "  ")
    X_test, y_test = read_segmented_bmes(test_lines, "  ")
    iterations = int(os.environ.get("GPU_TEXT_CRF_ITERATIONS", 5 if config.quick else 20))
    rounds = max(1, int(os.environ.get("GPU_TEXT_CRF_ROUNDS", 1 if config.quick else 2)))
    n_chars = sum(map(len, X))
    name = f"people-daily-199801 first {len(X)} lines ({n_chars} chars), {iterations} L-BFGS iterations"
    test_chars = [[token[0] for token in sentence] for sentence in X_test]
    gold_words = [bmes_to_words(chars, tags) for chars, tags in zip(test_chars, y_test)]

    def span_f1(tags: list[list[str]]) -> float:
        return score_words(gold_words, [bmes_to_words(chars, t) for chars, t in zip(test_chars, tags)]).f1

    try:
        peer = _Peer(X, y, iterations)
    except ImportError:  # the GPU machine: gpu_text's rows alone
        peer = None
    _train(X[:20], y[:20], 2, "cpu")  # compiles (or loads) the Numba kernels outside the timings
    peer_seconds, ours, ratios, peer_notes, peer_curves = [], [], [], [], []
    crf = None
    for _ in range(rounds if peer is not None else 1):
        load = os.getloadavg()[0]
        if peer is not None:
            logged, walls, cpus, wall, evaluations = peer.train()
            peer_seconds += walls
            peer_curves.append(training_curve(f"{PEER} round {len(peer_curves) + 1}", "iteration", "objective",
                                              peer.losses))
            peer_notes.append(f"{wall:.1f}s ({evaluations} evaluations; median {statistics.median(walls):.3f}s wall, "
                              f"{statistics.median(cpus):.3f}s CPU, {statistics.median(logged):.3f}s logged)")
        crf = _train(X, y, iterations, "cpu")
        ours.append(crf)
        if peer is not None:
            wall_ours = statistics.median(h["seconds"] for h in crf.history_)
            cpu_ours = statistics.median(h["cpu_seconds"] for h in crf.history_)
            ratios.append(f"{wall_ours / statistics.median(walls):.2f}x wall, "
                          f"{cpu_ours / statistics.median(cpus):.2f}x CPU, "
                          f"{wall_ours / statistics.median(logged):.2f}x vs logged (load {load:.1f})")
    rows = []
    if peer is not None:
        predicted = peer.predict(X_test)
        gold = [label for labels in y_test for label in labels]
        accuracy = np.mean([p == g for p, g in zip((label for labels in predicted for label in labels), gold)])
        rows.append(Measurement("crf", name, PEER, 1, peer_seconds, n_chars,
                                notes=f"1 thread (CRFsuite has none); seconds = wall per iteration; rounds of "
                                      f"{iterations} iterations: {', '.join(peer_notes)} (the first wall includes "
                                      f"CRFsuite's feature generation); "
                                      f"test token accuracy {accuracy:.4f}, word F1 {span_f1(predicted):.4f}",
                                extra={"curves": peer_curves}))
    backends = {"cpu": ours}
    if cuda_unavailable_reason() is None:
        _train(X[:20], y[:20], 2, "cuda")
        backends["cuda"] = [_train(X, y, iterations, "cuda")]
    for backend, fits in backends.items():
        seconds = [h["seconds"] for fit in fits for h in fit.history_]
        last = fits[-1]
        cpu = [h["cpu_seconds"] for fit in fits for h in fit.history_]
        per_round = ("; gpu_text/CRFsuite s per iteration by round (interleaved): "
                     + "; ".join(ratios)) if backend == "cpu" and ratios else ""
        curves = [training_curve(f"gpu_text[{backend}] round {i + 1}", "iteration", "objective",
                                 [(h["iteration"], h["objective"]) for h in fit.history_])
                  for i, fit in enumerate(fits)]
        rows.append(Measurement("crf", name, f"gpu_text[{backend}] CRF l-bfgs",
                                numba.get_num_threads() if backend == "cpu" else "GPU", seconds, n_chars,
                                peer=PEER if peer is not None else None,
                                notes=f"{last.n_unigram_} unigram observations; {sum(seconds):.1f}s wall "
                                      f"({sum(cpu):.1f}s CPU, median {statistics.median(cpu):.3f}s) for "
                                      f"{len(seconds)} iterations in {len(fits)} round(s) "
                                      f"({last.history_[-1]['evaluations']} evaluations a round); "
                                      f"test token accuracy {last.score(X_test, y_test):.4f}, word F1 "
                                      f"{span_f1(last.predict(X_test)):.4f}; iteration = line search + callback"
                                      + per_round, extra={"curves": curves}))
    return rows
