"""BPE vocabulary training: gpu_text's BPETrainer vs SentencePiece's BPE trainer, same data, same run.

Each corpus is cut by lines: the first 90% trains both, the last 10% is held out. Both get the same
vocabulary size counted the same way (3 specials + 256 byte pieces + the rest), byte fallback, no
character mapping (SentencePiece ``identity``, ours ``no``), the same space handling (extra spaces
removed, no dummy prefix). Two pairings of pre-splitting per corpus: ``whitespace`` (SentencePiece
``split_by_whitespace`` only, ours ``split="whitespace"``: the same pre-tokens) and ``word``
(SentencePiece's defaults, which also keep scripts and numbers apart, vs ours ``split="word"``).
The held-out text is encoded with both models (ours: Normalizer → PreTokenizer → BPEModel) and
the quality figure is raw held-out bytes per token.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement
from gpu_text import TextBatch
from gpu_text.tokenizer.bpe_trainer import BPETrainer
from gpu_text.tokenizer.tokenizer import Tokenizer

PEER = "sentencepiece BPE trainer"


def count_tokens(tokenizer: Tokenizer, lines: list[bytes], chunk: int = 20_000) -> int:
    """Tokens the trained tokenizer gives ``lines`` (Normalizer → PreTokenizer → BPEModel, byte fallback)."""
    return sum(int(tokenizer.encode(TextBatch.from_strings(lines[i:i + chunk]), "cpu").ids.values.size)
               for i in range(0, len(lines), chunk))


def train_sentencepiece(path: Path, prefix: Path, vocab_size: int, coverage: float, by_script: bool) -> None:
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        split_by_unicode_script=by_script, split_by_number=by_script,
        input=str(path), model_prefix=str(prefix), model_type="bpe", vocab_size=vocab_size,
        character_coverage=coverage, byte_fallback=True, normalization_rule_name="identity",
        add_dummy_prefix=False, remove_extra_whitespaces=True, split_by_whitespace=True,
        max_sentence_length=1 << 20, input_sentence_size=0, num_threads=os.cpu_count() or 1, minloglevel=2)


def run(config: Config) -> list[Measurement]:
    import sentencepiece as spm

    vocab = 4000 + 259 if config.quick else 8000 + 259  # 2 MB of zh needs ~3000 characters
    limit = 2_000_000 if config.quick else None
    rows: list[Measurement] = []
    threads = os.cpu_count() or 1
    for name in ("zh", "en"):
        lines, source = load_lines(name, limit)
        cut = int(len(lines) * 0.9)
        train, held_out = lines[:cut], lines[cut:]
        held_bytes = sum(len(line) for line in held_out)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "train.txt"
            path.write_bytes(b"\n".join(train) + b"\n")
            size = path.stat().st_size
            for split in ("whitespace", "word"):
                dataset = (f"{name} ({source}, train {size / 1e6:.1f} MB, held out {held_bytes / 1e6:.1f} MB, "
                           f"vocab {vocab}, split {split})")
                start = time.perf_counter()
                train_sentencepiece(path, Path(tmp) / "sp", vocab, 0.9995, by_script=split == "word")
                sp_seconds = time.perf_counter() - start
                sp = spm.SentencePieceProcessor(model_file=str(Path(tmp) / "sp.model"))
                sp_tokens = sum(len(ids) for ids in sp.encode([line.decode("utf-8", "replace") for line in held_out]))

                trainer = BPETrainer(vocab_size=vocab, character_coverage=0.9995, split=split, progress=False)
                start = time.perf_counter()
                model = trainer.fit(path).model_
                ours_seconds = time.perf_counter() - start
                ours_tokens = count_tokens(trainer.tokenizer_, held_out)

                sp_bpt, ours_bpt = held_bytes / max(sp_tokens, 1), held_bytes / max(ours_tokens, 1)
                sp_flags = "split_by_whitespace" + (" + unicode_script + number" if split == "word" else " only")
                rows.append(Measurement("train_tokenizer", dataset, PEER, threads, [sp_seconds], size,
                                        notes=f"held-out bytes/token {sp_bpt:.3f}; {sp_flags}",
                                        extra={"bytes_per_token": sp_bpt, "tokens": sp_tokens,
                                               "vocab_size": sp.get_piece_size()}))
                stats = {k: round(v, 3) if isinstance(v, float) else v for k, v in model.stats.items()}
                rows.append(Measurement(
                    "train_tokenizer", dataset, "gpu_text[cpu] BPETrainer", threads, [ours_seconds], size, peer=PEER,
                    notes=f"held-out bytes/token {ours_bpt:.3f} ({100 * (ours_bpt / sp_bpt - 1):+.2f}% vs "
                          f"sentencepiece); {model.n_merges} merges, {len(model.required_chars)} chars; count "
                          f"{stats['count_seconds']} s, merge {stats['merge_seconds']} s",
                    extra={"bytes_per_token": ours_bpt, "tokens": ours_tokens, "vocab_size": len(model),
                           "stats": stats}))
    return rows


if __name__ == "__main__":
    from benchmarks.harness import report

    rows = run(Config(quick=bool(os.environ.get("QUICK"))))
    print(report(rows, Config().out_dir, "train_tokenizer"))
    print(np.round([r.extra["bytes_per_token"] for r in rows], 4))
