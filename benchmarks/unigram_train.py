"""Unigram training: gpu_text's UnigramTrainer vs SentencePiece's Unigram trainer, same data, same run.

Each corpus is cut by lines: the first 90% trains both, the last 10% is held out. Both get the same
vocabulary size counted the same way (3 specials + 256 byte pieces + the learnt pieces), byte
fallback, ``character_coverage`` 0.9995, pieces of at most 16 characters, no character mapping
(SentencePiece ``identity``, ours ``no``), extra spaces removed and no dummy prefix. Pre-splitting,
two pairings: ``whitespace`` (SentencePiece ``split_by_whitespace`` alone, ours
``split="whitespace"``: the same pre-tokens) at every vocabulary size, and ``word`` (SentencePiece's
defaults, which also keep scripts and numbers apart, vs ours ``split="word"``) at the first. The
held-out lines are encoded with both models, each text one lattice, and the quality figure is raw
held-out bytes per token. Times: wall seconds of one run and the process's CPU seconds (both
trainers run in this process: SentencePiece's threads are counted too), on a shared machine.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement
from gpu_text import TextBatch
from gpu_text.tokenizer.unigram_trainer import UnigramTrainer

PEER = "sentencepiece Unigram trainer"
COVERAGE = 0.9995
MAX_PIECE_LENGTH = 16


def train_sentencepiece(path: Path, prefix: Path, vocab_size: int, by_script: bool, threads: int) -> None:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        input=str(path), model_prefix=str(prefix), model_type="unigram", vocab_size=vocab_size,
        character_coverage=COVERAGE, byte_fallback=True, normalization_rule_name="identity", add_dummy_prefix=False,
        remove_extra_whitespaces=True, split_by_whitespace=True, split_by_unicode_script=by_script,
        split_by_number=by_script, max_sentencepiece_length=MAX_PIECE_LENGTH, max_sentence_length=1 << 20,
        input_sentence_size=0, num_threads=threads, minloglevel=2)


def _timed(work) -> tuple[float, float]:
    cpu, start = time.process_time(), time.perf_counter()
    work()
    return time.perf_counter() - start, time.process_time() - cpu


def run(config: Config) -> list[Measurement]:
    import sentencepiece as spm

    limit = 1_000_000 if config.quick else 4_000_000
    vocab_sizes = (4000,) if config.quick else (8000, 16000)
    threads = os.cpu_count() or 1
    rows: list[Measurement] = []
    for name in ("zh", "en"):
        lines, source = load_lines(name, limit)
        cut = int(len(lines) * 0.9)
        held_out = [line for line in lines[cut:] if line]
        held_bytes = sum(len(line) for line in held_out)
        held_text = [line.decode("utf-8", "replace") for line in held_out]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "train.txt"
            path.write_bytes(b"\n".join(lines[:cut]) + b"\n")
            size = path.stat().st_size
            pairings = [(vocab, "whitespace") for vocab in vocab_sizes] + [(vocab_sizes[0], "word")]
            for vocab, split in pairings:
                dataset = (f"{name} ({source}, train {size / 1e6:.1f} MB, held out {held_bytes / 1e6:.2f} MB, "
                           f"vocab {vocab}, split {split})")
                prefix = Path(tmp) / f"sp{vocab}{split}"
                sp_s, sp_cpu = _timed(lambda: train_sentencepiece(path, prefix, vocab, split == "word", threads))
                sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
                sp_tokens = sum(len(ids) for ids in sp.encode(held_text))

                trainer = UnigramTrainer(vocab_size=vocab, character_coverage=COVERAGE,
                                         max_piece_length=MAX_PIECE_LENGTH, split=split, progress=False)
                ours_s, ours_cpu = _timed(lambda: trainer.fit(path))
                ours_tokens = int(trainer.tokenizer_.encode(TextBatch.from_strings(held_out), "cpu").ids.values.size)

                sp_bpt, ours_bpt = held_bytes / max(sp_tokens, 1), held_bytes / max(ours_tokens, 1)
                rows.append(Measurement("unigram_train", dataset, PEER, threads, [sp_s], size,
                                        notes=f"held-out bytes/token {sp_bpt:.3f}; CPU {sp_cpu:.1f} s",
                                        extra={"bytes_per_token": sp_bpt, "tokens": sp_tokens, "cpu_seconds": sp_cpu,
                                               "vocab_size": sp.get_piece_size()}))
                stats = trainer.stats_
                rows.append(Measurement(
                    "unigram_train", dataset, "gpu_text[cpu] UnigramTrainer", threads, [ours_s], size, peer=PEER,
                    notes=f"held-out bytes/token {ours_bpt:.3f} ({100 * (ours_bpt / sp_bpt - 1):+.2f}% vs "
                          f"sentencepiece); CPU {ours_cpu:.1f} s; {stats['seed_pieces']} seeds, "
                          f"{len(stats['em_rounds'])} EM rounds; count {stats['count_seconds']:.1f} s, seed "
                          f"{stats['seed_seconds']:.1f} s, EM {stats['em_seconds']:.1f} s",
                    extra={"bytes_per_token": ours_bpt, "tokens": ours_tokens, "cpu_seconds": ours_cpu,
                           "vocab_size": len(trainer.model_),
                           "stats": {k: v for k, v in stats.items() if k != "em_rounds"}}))
    return rows


if __name__ == "__main__":
    from benchmarks.harness import report

    print(report(run(Config(quick=bool(os.environ.get("QUICK")))), Config().out_dir, "unigram_train"))
