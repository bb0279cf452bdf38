"""CRF training: seconds per L-BFGS iteration of gpu_text (Numba, CUDA) vs python-crfsuite on the
same observations (the default Chinese pattern expanded by gpu_text, handed to CRFsuite as
attribute strings; CRFsuite adds its label transitions, as the pattern's ``B`` does) and the same
People's Daily characters, same run; plus token accuracy of each on the next lines.
CRFsuite's L2 term is c2·‖w‖², ours ρ2/2·‖w‖², so c2 = ρ2/2. ``GPU_TEXT_CRF_ITERATIONS`` sets the
number of iterations (default 20; 5 with ``--quick``)."""
from __future__ import annotations

import os
import time

import numba
import numpy as np

from benchmarks.corpora import SHARED
from benchmarks.harness import Config, Measurement
from gpu_text.backend import cuda_unavailable_reason
from gpu_text.crf import CRF, read_segmented_bmes
from gpu_text.crf.data import bmes_to_words
from gpu_text.metrics import score_words

PEER = "python-crfsuite lbfgs"


def _lines(quick: bool) -> tuple[list[str], list[str]]:
    path = SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    n = 1000 if quick else 4000
    return lines[:n], lines[n:n + n // 4]


def run(config: Config) -> list[Measurement]:
    import pycrfsuite

    train_lines, test_lines = _lines(config.quick)
    X, y = read_segmented_bmes(train_lines, "  ")
    X_test, y_test = read_segmented_bmes(test_lines, "  ")
    iterations = int(os.environ.get("GPU_TEXT_CRF_ITERATIONS", 5 if config.quick else 20))
    n_chars = sum(map(len, X))
    name = f"people-daily-199801 first {len(X)} lines ({n_chars} chars), {iterations} L-BFGS iterations"
    rows = []
    probe = CRF(rho1=0.0, rho2=1e-4, max_iterations=1, backend="cpu").fit(X[:1], y[:1])
    space = probe.space_.__class__(probe.space_.patterns).fit(X)
    strings = np.array([space.observation([v for v in row if v >= 0]) for row in space.unigram_parts.tolist()],
                       dtype=object)
    encoded = space.encode(X)
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in range(len(X)):
        start, end = encoded.seq_offsets[s], encoded.seq_offsets[s + 1]
        items = [list(strings[encoded.u_ids[encoded.u_offsets[t]:encoded.u_offsets[t + 1]]]) for t in range(start, end)]
        trainer.append(items, y[s])
    trainer.set_params({"c1": 0.0, "c2": 0.5e-4, "max_iterations": iterations, "feature.possible_transitions": True,
                        "feature.possible_states": True, "num_memories": 5})
    started = time.perf_counter()
    trainer.train("/tmp/gpu_text_bench.crfsuite")
    wall = time.perf_counter() - started
    per_iteration = [it["time"] for it in trainer.logparser.iterations]
    tagger = pycrfsuite.Tagger()
    tagger.open("/tmp/gpu_text_bench.crfsuite")
    test_encoded = space.encode(X_test)
    predicted = [tagger.tag([list(strings[test_encoded.u_ids[test_encoded.u_offsets[t]:test_encoded.u_offsets[t + 1]]])
                             for t in range(test_encoded.seq_offsets[s], test_encoded.seq_offsets[s + 1])])
                 for s in range(len(X_test))]
    gold = [label for labels in y_test for label in labels]
    accuracy = np.mean([p == g for p, g in zip((label for labels in predicted for label in labels), gold)])
    test_chars = [[token[0] for token in sentence] for sentence in X_test]
    gold_words = [bmes_to_words(chars, tags) for chars, tags in zip(test_chars, y_test)]

    def span_f1(tags: list[list[str]]) -> float:
        return score_words(gold_words, [bmes_to_words(chars, t) for chars, t in zip(test_chars, tags)]).f1

    rows.append(Measurement("crf", name, PEER, 1, per_iteration, n_chars,
                            notes=f"1 thread (CRFsuite has none); {wall:.1f}s for {len(per_iteration)} iterations "
                                  f"({sum(it.get('linesearch_trials', 1) for it in trainer.logparser.iterations)} "
                                  f"evaluations); "
                                  f"test token accuracy {accuracy:.4f}, word F1 {span_f1(predicted):.4f}"))
    backends = ["cpu"] + (["cuda"] if cuda_unavailable_reason() is None else [])
    for backend in backends:
        crf = CRF(rho1=0.0, rho2=1e-4, max_iterations=iterations, stop_window=0, epsilon=0.0, backend=backend)
        crf.fit(X, y)
        seconds = [h["seconds"] for h in crf.history_]
        rows.append(Measurement("crf", name, f"gpu_text[{backend}] CRF l-bfgs",
                                numba.get_num_threads() if backend == "cpu" else "GPU", seconds, n_chars, peer=PEER,
                                notes=f"{crf.n_unigram_} unigram observations; {sum(seconds):.1f}s for "
                                      f"{len(seconds)} iterations ({crf.history_[-1]['evaluations']} evaluations); "
                                      f"test token accuracy {crf.score(X_test, y_test):.4f}, word F1 "
                                      f"{span_f1(crf.predict(X_test)):.4f}; "
                                      f"iteration = line search + callback"))
    return rows
