"""Encode throughput: gpu_text (imported SentencePiece model; Numba, CUDA) vs sentencepiece (the
same .model, same text, same number of threads) and HF tokenizers (a BPE of the same vocabulary
size trained on the same data), zh and en."""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement, cpu_thread_counts, measure, measure_interleaved, on_gpu
from gpu_text import TextBatch
from gpu_text.backend import get_backend
from gpu_text.tokenizer.bpe import BPEModel
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer
from gpu_text.tokenizer.tokenizer import Tokenizer

VOCAB = 8000
PEER = "sentencepiece"
BULK_BYTES = 256 << 20  # the GPU's bulk batch (1/8 of it with --quick)


def _train_models(folder: Path, lines: list[bytes]) -> tuple[str, object]:
    import sentencepiece as spm
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, pre_tokenizers, trainers

    corpus = folder / "train.txt"
    corpus.write_bytes(b"\n".join(lines[: len(lines) // 2]))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / "sp"), model_type="bpe",
                                   vocab_size=VOCAB, byte_fallback=True, character_coverage=0.9995,
                                   num_threads=2, minloglevel=2, input_sentence_size=200_000,
                                   shuffle_input_sentence=False)
    hf = HFTokenizer(models.BPE(unk_token="<unk>"))
    hf.pre_tokenizer = pre_tokenizers.Metaspace()
    hf.train([str(corpus)], trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<unk>"], show_progress=False))
    return str(folder / "sp.model"), hf


def replicated(batch: TextBatch, target_bytes: int) -> TextBatch:
    """``batch`` repeated until it holds at least ``target_bytes`` (a bulk-sized input from a sample).

    >>> replicated(TextBatch.from_strings(["ab", "c"]), 7).to_pylist()
    ['ab', 'c', 'ab', 'c', 'ab', 'c']
    """
    copies = max(1, -(-target_bytes // max(batch.nbytes, 1)))
    data = np.tile(np.asarray(batch.data), copies)
    starts = (np.asarray(batch.offsets[:-1])[None, :] + batch.nbytes * np.arange(copies)[:, None]).ravel()
    return TextBatch(data, np.append(starts, data.size).astype(np.int64), check=False)


def bulk_rows(ours: Tokenizer, big: TextBatch, name: str, be: Any, on_device: TextBatch, sync: Callable[[], None],
              repeat: int) -> list[Measurement]:
    """GPU throughput on a bulk-sized batch: text already on the device, and host to host (copy the
    text in, encode, copy ids and offsets back).

    >>> from gpu_text.tokenizer.normalizer import Normalizer
    >>> rows = bulk_rows(Tokenizer(BPEModel(["<unk>", "a"], [0.0, 0.0], [2, 1]), Normalizer(), PreTokenizer()),
    ...                  TextBatch.from_strings(["a a"]), "tiny", get_backend("cpu"),
    ...                  TextBatch.from_strings(["a a"]), lambda: None, 1)
    >>> [r.notes for r in rows]
    ['text and ids on the GPU', 'host text in, host ids out']
    """
    def host_to_host() -> None:
        encoded = ours.encode(big.to_device(be.xp), be)
        for array in (encoded.ids.values, encoded.ids.offsets):
            if hasattr(array, "get"):  # a CuPy array: copy it to the host
                array.get()

    return [Measurement("tokenize", name, "gpu_text[cuda] bulk", "GPU",
                        measure(lambda: ours.encode(on_device, be), repeat, sync), big.nbytes,
                        notes="text and ids on the GPU"),
            Measurement("tokenize", name, "gpu_text[cuda] bulk", "GPU", measure(host_to_host, repeat, sync),
                        big.nbytes, notes="host text in, host ids out")]


def _one_megabyte_pre_tokens(config: Config) -> list[Measurement]:
    """A single 1 MB pre-token (Cn none Han run, a run of 'a') must encode in well under a second."""
    model = BPEModel(["<unk>", "a", "aa", "aaaa", "你", "你你"], [0.0, -1.0, -2.0, -3.0, -1.0, -2.0], [2, 1, 1, 1, 1, 1])
    pre = PreTokenizer()
    rows = []
    numba.set_num_threads(1)
    for name, text in (("'a' * 2**20", "a" * (1 << 20)), ("'你' * 2**18 (Han run)", "你" * (1 << 18))):
        rows.append(Measurement("tokenize", f"one 1 MB pre-token: {name}", "gpu_text[cpu] pre-tokenize + BPE", 1,
                                measure(lambda: (pre.pre_tokenize([text], "cpu"), model.encode_strings([text])),
                                        config.repeat), len(text.encode()), notes="target: well under 1 s"))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def run(config: Config) -> list[Measurement]:
    import sentencepiece as spm

    rows: list[Measurement] = []
    limit = 2_000_000 if config.quick else 16_000_000
    for dataset in ("zh", "en"):
        lines, source = load_lines(dataset, limit)
        with tempfile.TemporaryDirectory() as tmp:
            model_path, hf = _train_models(Path(tmp), lines)
            texts = [line.decode("utf-8", "replace") for line in lines]
            batch = TextBatch.from_strings(texts)
            name = f"{dataset} ({source}, {batch.nbytes / 1e6:.1f} MB, {len(batch)} lines, vocab {VOCAB})"
            sp = spm.SentencePieceProcessor(model_file=model_path)
            ours = Tokenizer.from_sentencepiece(model_path)
            cpu = get_backend("cpu")
            for threads in cpu_thread_counts():
                times = measure_interleaved({
                    PEER: lambda: sp.encode(texts, num_threads=threads),
                    "hf": lambda: hf.encode_batch(texts),
                    "ours": lambda: ours.encode(batch, cpu),
                }, config.repeat)
                rows.append(Measurement("tokenize", name, PEER, threads, times[PEER], batch.nbytes,
                                        notes="sentencepiece 0.2, same .model"))
                rows.append(Measurement("tokenize", name, "HF tokenizers BPE", threads, times["hf"], batch.nbytes,
                                        peer=PEER, notes="own BPE, same vocab size; RAYON threads = all cores"))
                rows.append(Measurement("tokenize", name, "gpu_text[cpu]", threads, times["ours"], batch.nbytes,
                                        peer=PEER, notes="imported .model, identical ids; runs interleaved"))
            gpu = on_gpu(batch)
            if gpu is not None:
                be, on_device, sync = gpu
                rows.append(Measurement("tokenize", name, "gpu_text[cuda]", "GPU",
                                        measure(lambda: ours.encode(on_device, be), config.repeat, sync),
                                        batch.nbytes, peer=PEER, notes="text and ids on the GPU"))
                big = replicated(batch, BULK_BYTES // (8 if config.quick else 1))
                rows += bulk_rows(ours, big, f"{dataset} repeated to {big.nbytes / 1e6:.0f} MB", *on_gpu(big),
                                  config.repeat)
    rows += _one_megabyte_pre_tokens(config)
    for m in rows:  # compare each thread count with sentencepiece at the same count
        if m.peer == PEER:
            m.peer = f"{PEER}@{m.threads}" if m.threads != "GPU" else f"{PEER}@{numba.config.NUMBA_NUM_THREADS}"
        elif m.implementation == PEER:
            m.implementation = f"{PEER}@{m.threads}"
    return rows
