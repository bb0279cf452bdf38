"""CRF word segmentation end to end: ``gpu-text crf segment`` (the CLI, in a fresh process: start,
model load, read, label, write) vs python-crfsuite tagging with Python feature extraction (what a
CRFsuite user writes: per line, the default pattern's attribute strings built in Python, then
``Tagger.tag``, words joined by spaces, written), on the same raw People's Daily text.

Both models are trained on the same lines with the same observations (the default segmentation
pattern: Wapic's window over width-folded characters plus the character-class window), the same
iterations and penalties (CRFsuite's c1 = ρ1, c2 = ρ2/2), so they are the same model size; the
active feature counts are printed. After one untimed run of each (Numba's cache filled, files
in the page cache), runs alternate (gpu_text, CRFsuite, gpu_text, …) so a slow spell of the shared
machine slows both; wall seconds and CPU seconds (user + system; the CLI's from its child
process's rusage) are both reported, the second being the fairer figure on a loaded machine.
Prints JSON.

``python -m benchmarks.crf_tagging [--train-lines N] [--lines N] [--iterations N] [--repeat N]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.corpora import SHARED
from gpu_text.crf.data import bmes_to_words, words_to_bmes
from gpu_text.crf.segmentation import character_class, fold

OUT = ("_x+1", "_x+2")
BEFORE = ("_x-2", "_x-1")


def python_features(text: str) -> list[list[str]]:
    """The default segmentation pattern's attributes of every character, in plain Python (the
    same strings gpu_text's observations are: ``U05:a/b``; CRFsuite adds the transitions)."""
    folded = [fold(c) for c in text]
    classes = [character_class(f) for f in folded]
    c = [*BEFORE, *folded, *OUT]
    k = [*BEFORE, *classes, *OUT]
    out = []
    for i in range(2, len(text) + 2):
        out.append([f"U00:{c[i - 2]}", f"U01:{c[i - 1]}", f"U02:{c[i]}", f"U03:{c[i + 1]}", f"U04:{c[i + 2]}",
                    f"U05:{c[i - 1]}/{c[i]}", f"U06:{c[i]}/{c[i + 1]}", f"U07:{c[i - 2]}/{c[i - 1]}",
                    f"U08:{c[i + 1]}/{c[i + 2]}", f"U09:{c[i - 1]}/{c[i + 1]}", f"U10:{k[i - 1]}", f"U11:{k[i]}",
                    f"U12:{k[i + 1]}", f"U13:{k[i - 1]}/{k[i]}", f"U14:{k[i]}/{k[i + 1]}",
                    f"U15:{k[i - 2]}/{k[i - 1]}/{k[i]}", f"U16:{k[i - 1]}/{k[i]}/{k[i + 1]}",
                    f"U17:{k[i]}/{k[i + 1]}/{k[i + 2]}"])
    return out


def crfsuite_segment(model: str, source: Path, target: Path) -> int:
    """A CRFsuite user's segmenter: every line of ``source`` tagged, words written to ``target``."""
    import pycrfsuite

    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    characters = 0
    with open(source, encoding="utf-8") as lines, open(target, "w", encoding="utf-8") as out:
        for line in lines:
            words = []
            for piece in line.split():
                words += bmes_to_words(list(piece), tagger.tag(python_features(piece)))
                characters += len(piece)
            out.write(" ".join(words) + "\n")
    return characters


def main() -> int:
    import pycrfsuite

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-lines", type=int, default=4000)
    parser.add_argument("--lines", type=int, default=19484, help="raw lines to segment (the month has 19,484)")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    lines = [line.split() for line in (SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt")
             .read_text(encoding="utf-8").splitlines()]
    work = Path(tempfile.mkdtemp(prefix="crf_tagging_"))
    train = work / "train.txt"
    train.write_text("\n".join("  ".join(w) for w in lines[:args.train_lines] if w) + "\n", encoding="utf-8")
    raw = work / "raw.txt"
    raw.write_text("\n".join("".join(w) for w in lines[:args.lines]) + "\n", encoding="utf-8")
    n_chars = sum(len("".join(w)) for w in lines[:args.lines])
    cli = [sys.executable, "-m", "gpu_text.cli", "crf"]
    rho1, rho2 = 0.5, 1e-4
    subprocess.run(cli + ["train", "--segmented", "--backend", "cpu", "--rho1", str(rho1), "--rho2", str(rho2),
                          "--max-iterations", str(args.iterations), str(train), str(work / "m.crf")],
                   check=True, stderr=subprocess.DEVNULL)
    trainer = pycrfsuite.Trainer(verbose=False)
    for words in lines[:args.train_lines]:
        if words:
            chars, tags = words_to_bmes(words)
            trainer.append(python_features("".join(chars)), tags)
    trainer.set_params({"c1": rho1, "c2": rho2 / 2, "max_iterations": args.iterations,
                        "feature.possible_transitions": True})
    trainer.train(str(work / "m.crfsuite"))
    info = pycrfsuite.Tagger()
    info.open(str(work / "m.crfsuite"))
    crfsuite_features = len(info.info().state_features)
    gpu_text_features = sum(1 for line in (work / "m.crf").read_text(encoding="utf-8").splitlines()
                            if line.count("\t") == 2)

    def run_gpu_text() -> str:
        done = subprocess.run(cli + ["segment", "--backend", os.environ.get("GPU_TEXT_BACKEND", "cpu"), "--model",
                                     str(work / "m.crf"), str(raw), str(work / "out_gpu_text.txt")],
                              check=True, capture_output=True, text=True)
        return done.stderr.strip().splitlines()[-1]

    ours_name, peer_name = "gpu-text crf segment (CLI)", "python-crfsuite + Python features"
    times: dict[str, list[float]] = {ours_name: [], peer_name: []}
    cpu: dict[str, list[float]] = {ours_name: [], peer_name: []}

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    run_gpu_text()  # untimed: Numba's cache and the page cache warm, as for a user's second run
    crfsuite_segment(str(work / "m.crfsuite"), raw, work / "out_crfsuite.txt")
    report = ""
    for _ in range(args.repeat):
        start, cpu_start = time.perf_counter(), children_cpu()
        report = run_gpu_text()
        times[ours_name].append(time.perf_counter() - start)
        cpu[ours_name].append(children_cpu() - cpu_start)
        start, cpu_start = time.perf_counter(), time.process_time()
        crfsuite_segment(str(work / "m.crfsuite"), raw, work / "out_crfsuite.txt")
        times[peer_name].append(time.perf_counter() - start)
        cpu[peer_name].append(time.process_time() - cpu_start)
    medians = {name: statistics.median(t) for name, t in times.items()}
    cpu_medians = {name: statistics.median(t) for name, t in cpu.items()}
    ours, peer = medians.values()
    agree = sum(a == b for a, b in zip((work / "out_gpu_text.txt").read_text(encoding="utf-8").splitlines(),
                                       (work / "out_crfsuite.txt").read_text(encoding="utf-8").splitlines()))
    print(json.dumps({"input": f"people-daily-199801 first {args.lines} lines, raw ({n_chars} characters)",
                      "train": f"first {args.train_lines} lines, {args.iterations} iterations, rho1={rho1} rho2={rho2}",
                      "active_features": {"gpu_text": gpu_text_features, "crfsuite_state_features": crfsuite_features},
                      "seconds": {k: [round(x, 2) for x in v] for k, v in times.items()},
                      "cpu_seconds": {k: [round(x, 2) for x in v] for k, v in cpu.items()},
                      "characters_per_second": {k: round(n_chars / v) for k, v in medians.items()},
                      "characters_per_cpu_second": {k: round(n_chars / max(v, 1e-9)) for k, v in cpu_medians.items()},
                      "speedup_vs_crfsuite": round(peer / ours, 2),
                      "cpu_speedup_vs_crfsuite": round(cpu_medians[peer_name] / max(cpu_medians[ours_name], 1e-9), 2),
                      "load_average": os.getloadavg(), "identical_output_lines": agree,
                      "gpu_text_cli_report": report, "cpu_count": os.cpu_count()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
