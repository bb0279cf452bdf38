"""Dictionary segmentation throughput: gpu_text (Numba, CUDA) vs jieba (HMM=False), same
dictionary (jieba's dict.txt), same text, same run. gpu_text runs compat="jieba", so both produce
the same words on Han text (tests/test_jieba_parity.py)."""
from __future__ import annotations

from pathlib import Path

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement, cpu_thread_counts, measure, on_gpu
from gpu_text import TextBatch
from gpu_text.backend import get_backend
from gpu_text.segment import Segmenter, load_dictionary
from gpu_text.trie import DoubleArrayTrie

PEER = "jieba.cut(HMM=False)"


def run(config: Config) -> list[Measurement]:
    import jieba

    dict_path = Path(jieba.__file__).parent / "dict.txt"
    lines, source = load_lines("zh", 2_000_000 if config.quick else 16_000_000)
    text = [line.decode("utf-8", "replace") for line in lines]
    batch = TextBatch.from_strings(lines)
    name = f"zh ({source}, {batch.nbytes / 1e6:.1f} MB, {len(batch)} lines)"
    tokenizer = jieba.Tokenizer(str(dict_path))
    tokenizer.initialize()
    rows = [Measurement("segment", name, PEER, 1, measure(lambda: [list(tokenizer.cut(t, HMM=False)) for t in text],
                                                           max(1, config.repeat // 2), warmup=0),
                        batch.nbytes, notes="jieba 0.42, one process")]
    words = [line.split(" ", 1)[0].encode() for line in dict_path.read_text(encoding="utf-8").splitlines()]
    words = list(dict.fromkeys(words))  # jieba's file lists one word twice
    DoubleArrayTrie.build(words[:10])  # compile once, outside the timing
    rows.append(Measurement("segment", f"jieba dict.txt ({len(words)} words)", "DoubleArrayTrie.build", 1,
                            measure(lambda: DoubleArrayTrie.build(words), config.repeat, warmup=0),
                            sum(map(len, words)), notes="trie build; target < 2 s on one core"))
    segmenter = Segmenter(load_dictionary(dict_path), compat="jieba")
    cpu = get_backend("cpu")
    for threads in cpu_thread_counts():
        rows.append(Measurement("segment", name, "gpu_text[cpu] Segmenter(compat='jieba')", threads,
                                measure(lambda: segmenter.segment(batch, cpu), config.repeat), batch.nbytes, peer=PEER,
                                notes="spans; same words as jieba on Han text"))
    gpu = on_gpu(batch)
    if gpu is not None:
        be, on_device, sync = gpu
        rows.append(Measurement("segment", name, "gpu_text[cuda] Segmenter(compat='jieba')", "GPU",
                                measure(lambda: segmenter.segment(on_device, be), config.repeat, sync), batch.nbytes,
                                peer=PEER, notes="input and spans on the GPU"))
    return rows
