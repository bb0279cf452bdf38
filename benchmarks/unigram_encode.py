"""Unigram encode throughput: gpu_text (an imported SentencePiece Unigram ``.model``, Numba on the
CPU) vs sentencepiece (the same model, the same text, the same number of threads), zh and en:
models trained by sentencepiece on half of a corpus, encoding the other half (wall and CPU
seconds, interleaved); ids checked identical first. Prints sentencepiece's seconds over gpu_text's.
Chinese also at 32k pieces (not with --quick): a large vocabulary's trie is what outgrows a core's
cache."""
from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import numba

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement
from benchmarks.tokenize import interleaved_wall_and_cpu
from gpu_text import TextBatch
from gpu_text.backend import get_backend
from gpu_text.tokenizer.tokenizer import Tokenizer

VOCABS = {"zh": (8000, 32000), "en": (8000,)}
THREADS = 2
PEER = "sentencepiece"


def _train(folder: Path, lines: list[bytes], vocab: int) -> str:
    import sentencepiece as spm

    corpus = folder / "train.txt"
    corpus.write_bytes(b"\n".join(lines))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / "u"), model_type="unigram",
                                   vocab_size=vocab, byte_fallback=True, character_coverage=0.9995, num_threads=2,
                                   minloglevel=2, input_sentence_size=100_000, shuffle_input_sentence=False)
    return str(folder / "u.model")


def run(config: Config) -> list[Measurement]:
    import sentencepiece as spm

    rows: list[Measurement] = []
    limit = 2_000_000 if config.quick else 8_000_000
    cpu = get_backend("cpu")
    threads = min(THREADS, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    try:
        for dataset, vocab in ((d, v) for d, vs in VOCABS.items() for v in vs[:1 if config.quick else None]):
            lines, source = load_lines(dataset, limit)
            half = len(lines) // 2
            texts = [line.decode("utf-8", "replace") for line in lines[half:]]
            batch = TextBatch.from_strings(texts)
            with tempfile.TemporaryDirectory() as tmp:
                path = _train(Path(tmp), lines[:half], vocab)
                sp = spm.SentencePieceProcessor(model_file=path)
                ours = Tokenizer.from_sentencepiece(path)
                if ours.encode(batch, cpu).ids.to_pylist() != sp.encode(texts):
                    raise AssertionError(f"{dataset}: gpu_text's ids differ from sentencepiece's")
                times = interleaved_wall_and_cpu({PEER: lambda: sp.encode(texts, num_threads=threads),
                                                  "ours": lambda: ours.encode(batch, cpu)}, config.repeat)
            (sp_wall, sp_cpu), (wall, cpu_seconds) = times[PEER], times["ours"]
            name = f"{dataset} unigram {vocab // 1000}k (trained on half of {source}; {batch.nbytes / 1e6:.1f} MB)"
            rows.append(Measurement("unigram_encode", name, PEER, threads, sp_wall, batch.nbytes,
                                    notes="sentencepiece 0.2, same .model", extra={"cpu_seconds": sp_cpu}))
            rows.append(Measurement("unigram_encode", name, "gpu_text[cpu]", threads, wall, batch.nbytes, peer=PEER,
                                    notes="imported .model, identical ids; runs interleaved",
                                    extra={"cpu_seconds": cpu_seconds}))
            print(f"unigram_encode {dataset} {vocab // 1000}k @{threads} threads: sentencepiece/gpu_text wall median "
                  f"{statistics.median(sp_wall) / statistics.median(wall):.2f} (min {min(sp_wall) / min(wall):.2f}), "
                  f"CPU median {statistics.median(sp_cpu) / statistics.median(cpu_seconds):.2f} "
                  f"(min {min(sp_cpu) / min(cpu_seconds):.2f}) (target >= 1.5)", flush=True)
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows
