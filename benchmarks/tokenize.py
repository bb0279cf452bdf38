"""Encode throughput: gpu_text (imported SentencePiece model; Numba, CUDA) vs sentencepiece (the
same .model, same text, same number of threads) and HF tokenizers (a BPE of the same vocabulary
size trained on the same data), zh and en; then gpu_text vs sentencepiece at 8k, 16k and 32k
pieces as a new user meets them: models trained by sentencepiece on one Chinese news corpus,
encoding another (wall and CPU seconds, interleaved)."""
from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

from benchmarks.corpora import SHARED, load_lines
from benchmarks.harness import Config, Measurement, cpu_thread_counts, measure, measure_interleaved, on_gpu
from gpu_text import TextBatch
from gpu_text.backend import get_backend
from gpu_text.tokenizer.bpe import BPEModel
from gpu_text.tokenizer.pre_tokenizer import PreTokenizer
from gpu_text.tokenizer.tokenizer import Tokenizer

VOCAB = 8000
VOCABS = (8000, 16000, 32000)  # the vocabulary sweep (training corpus: zh-sogou-news)
# the text the sweep encodes: another news corpus (People's Daily, January 1998), words joined back
EVAL_ZH = SHARED / "zh-people-daily-199801" / "199801_segmented_words.txt"
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


def _train_sentencepiece(path: Path, corpus: Path, vocab: int) -> str:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(path), model_type="bpe", vocab_size=vocab,
                                   byte_fallback=True, character_coverage=0.9995, num_threads=2, minloglevel=2,
                                   input_sentence_size=200_000, shuffle_input_sentence=False)
    return f"{path}.model"


def eval_lines(train: list[bytes], limit: int, path: Path = EVAL_ZH) -> tuple[list[str], str]:
    """The sweep's text, about ``limit`` bytes: ``path`` (People's Daily; its words joined back, the
    file separates them by two spaces) when the shared data has it, else the half of ``train`` the
    models were not trained on.

    >>> import tempfile
    >>> eval_lines([b"a", b"b", b"c", b"d"], 10, Path(tempfile.mkdtemp()) / "absent.txt")
    (['c', 'd'], 'held-out half')
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "pd.txt").write_text("迈向  充满\\n希望  的\\n新")
    >>> eval_lines([], 13, folder / "pd.txt")  # until 13 bytes or more
    (['迈向充满', '希望的'], 'pd.txt')
    """
    if path.is_file():
        lines, total = [], 0
        for line in path.read_text(encoding="utf-8").split("\n"):
            lines.append(line.replace("  ", ""))
            total += len(lines[-1].encode())
            if total >= limit:
                break
        return lines, path.name
    return [line.decode("utf-8", "replace") for line in train[len(train) // 2:]], "held-out half"


def interleaved_wall_and_cpu(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[list[float], list[float]]]:
    """(wall seconds, process CPU seconds) of ``repeat`` rounds of one call of each of ``fns``
    (after an untimed round), as :func:`~benchmarks.harness.measure_interleaved` takes them.

    >>> times = interleaved_wall_and_cpu({"a": lambda: None}, 2)
    >>> [len(t) for t in times["a"]]
    [2, 2]
    """
    for fn in fns.values():
        fn()
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            times[name][0].append(time.perf_counter() - wall)
            times[name][1].append(time.process_time() - cpu)
    return times


def vocabulary_rows(config: Config) -> list[Measurement]:
    """gpu_text[cpu] vs sentencepiece (same .model, same lines, same threads) at each of
    :data:`VOCABS`; prints the ratios (sentencepiece's seconds over gpu_text's, min and median of
    wall and of CPU time)."""
    import sentencepiece as spm

    train, source = load_lines("zh", 2_000_000 if config.quick else None)
    texts, eval_source = eval_lines(train, 1_000_000 if config.quick else 1 << 40)
    batch = TextBatch.from_strings(texts)
    cpu = get_backend("cpu")
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "train.txt"
        corpus.write_bytes(b"\n".join(train))
        for vocab in VOCABS:
            model_path = _train_sentencepiece(Path(tmp) / f"sp{vocab}", corpus, vocab)
            sp = spm.SentencePieceProcessor(model_file=model_path)
            ours = Tokenizer.from_sentencepiece(model_path)
            name = (f"zh vocab {vocab // 1000}k (trained on {source}; encoding {eval_source}, "
                    f"{batch.nbytes / 1e6:.1f} MB, {len(batch)} lines)")
            for threads in cpu_thread_counts():
                times = interleaved_wall_and_cpu({PEER: lambda: sp.encode(texts, num_threads=threads),
                                                  "ours": lambda: ours.encode(batch, cpu)}, config.repeat)
                (sp_wall, sp_cpu), (wall, cpu_seconds) = times[PEER], times["ours"]
                rows.append(Measurement("tokenize", name, PEER, threads, sp_wall, batch.nbytes,
                                        notes="sentencepiece 0.2, same .model", extra={"cpu_seconds": sp_cpu}))
                rows.append(Measurement("tokenize", name, "gpu_text[cpu]", threads, wall, batch.nbytes, peer=PEER,
                                        notes="imported .model, identical ids; runs interleaved",
                                        extra={"cpu_seconds": cpu_seconds}))
                print(f"tokenize {vocab // 1000}k @{threads} threads: sentencepiece/gpu_text wall "
                      f"min {min(sp_wall) / min(wall):.2f} median {statistics.median(sp_wall) / statistics.median(wall):.2f}"
                      f", CPU min {min(sp_cpu) / min(cpu_seconds):.2f} "
                      f"median {statistics.median(sp_cpu) / statistics.median(cpu_seconds):.2f}", flush=True)
    return rows


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
    rows += vocabulary_rows(config)
    rows += _one_megabyte_pre_tokens(config)
    for m in rows:  # compare each thread count with sentencepiece at the same count
        if m.peer == PEER:
            m.peer = f"{PEER}@{m.threads}" if m.threads != "GPU" else f"{PEER}@{numba.config.NUMBA_NUM_THREADS}"
        elif m.implementation == PEER:
            m.implementation = f"{PEER}@{m.threads}"
    return rows
