"""BytePiece training: gpu_text's BytePieceTrainer vs PieceTokenizer's own trainer (the seed:
``piece-tokenizer count --method bytepiece``, built from its sdist by tests/piece_tokenizer_oracle.py)
and vs Su Jianlin's ``bytepiece`` package; compression vs those and vs SentencePiece BPE.

Each corpus is cut by lines: the first 90% trains, the last 10% is held out; the quality figure is
raw held-out bytes per token. Options, matched where they mean the same thing: the same vocabulary
size (ours and the seed's count 3 specials + 256 bytes + learned pieces; ``bytepiece``'s
``max_vocab_size`` counts its 3 specials and every piece, bytes included; SentencePiece's
``vocab_size`` its specials, byte pieces and merges), ``min_count`` and a maximum piece length of 18
bytes. Not comparable and left as each has it: ``bytepiece`` pre-splits nothing (its pieces may
cross spaces and punctuation, NFC-normalized), the seed and we split GPT-4 style; SentencePiece BPE
is a different algorithm (``identity`` normalization, byte fallback). The seed's model must be ours
piece for piece: the row says whether the two files are identical. Times are wall seconds of one run
(and CPU seconds) on a shared, loaded machine: read them as rough.
"""
from __future__ import annotations

import filecmp
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement
from benchmarks.train_tokenizer import train_sentencepiece
from gpu_text import TextBatch
from gpu_text.tokenizer.bytepiece_trainer import BytePieceTrainer

SEED = "piece-tokenizer count (seed)"
MIN_COUNT = 8
MAX_PIECE = 18


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _bytepiece_tokens(model: Path, held_out: list[bytes]) -> int:
    from bytepiece import Tokenizer

    tok = Tokenizer(str(model))
    return sum(len(tok.tokenize(line.decode("utf-8", "replace"))) for line in held_out if line)


def run(config: Config) -> list[Measurement]:
    from tests.piece_tokenizer_oracle import cli_path

    limit = 500_000 if config.quick else 2_000_000
    learned = 3000 if config.quick else 6000  # SentencePiece needs room for every zh character kept
    vocab = learned + 259
    threads = os.cpu_count() or 1
    rows: list[Measurement] = []
    cli = cli_path()
    for name in ("zh", "en"):
        lines, source = load_lines(name, limit)
        cut = int(len(lines) * 0.9)
        train, held_out = lines[:cut], lines[cut:]
        held_bytes = sum(len(line) for line in held_out)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "train.txt"
            path.write_bytes(b"\n".join(train) + b"\n")
            size = path.stat().st_size
            dataset = (f"{name} ({source}, train {size / 1e6:.1f} MB, held out {held_bytes / 1e6:.2f} MB, "
                       f"vocab {vocab}, min_count {MIN_COUNT})")

            trainer = BytePieceTrainer(vocab_size=vocab, min_count=MIN_COUNT, max_piece_size=MAX_PIECE)
            cpu, start = time.process_time(), time.perf_counter()
            tok = trainer.train_files(path)
            ours_s, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
            tok.save_model_file(Path(tmp) / "ours.model")
            ours_tokens = int(tok.encode(TextBatch.from_strings(held_out), "cpu").ids.values.size)
            ours_bpt = held_bytes / max(ours_tokens, 1)
            rows.append(Measurement("bytepiece_train", dataset, "gpu_text[cpu] BytePieceTrainer", threads, [ours_s],
                                    size, peer=SEED if cli else None,
                                    notes=f"held-out bytes/token {ours_bpt:.3f}; CPU {ours_cpu:.1f} s",
                                    extra={"bytes_per_token": ours_bpt, "cpu_seconds": ours_cpu}))

            if cli is not None:
                cpu, start = _children_cpu(), time.perf_counter()
                subprocess.run([str(cli), "count", "--method", "bytepiece", "--input", str(path), "--model",
                                str(Path(tmp) / "seed"), "--vocab-size", str(learned), "--min-count", str(MIN_COUNT),
                                "--max-piece-size", str(MAX_PIECE)], check=True, capture_output=True)
                seed_s, seed_cpu = time.perf_counter() - start, _children_cpu() - cpu
                same = filecmp.cmp(Path(tmp) / "seed.model", Path(tmp) / "ours.model", shallow=False)
                rows.append(Measurement("bytepiece_train", dataset, SEED, threads, [seed_s], size,
                                        notes=f"model file identical to ours: {same}; CPU {seed_cpu:.1f} s "
                                              f"(same model, so the same held-out bytes/token)",
                                        extra={"identical": same, "cpu_seconds": seed_cpu}))

            try:
                from bytepiece import Trainer
            except ImportError:
                Trainer = None
            if Trainer is not None:
                peer = Trainer(order=6, max_vocab_size=vocab, max_piece_length=MAX_PIECE, min_count=MIN_COUNT)
                cpu, start = time.process_time(), time.perf_counter()
                peer.train([line.decode("utf-8", "replace") for line in train])
                peer_s, peer_cpu = time.perf_counter() - start, time.process_time() - cpu
                peer.save(str(Path(tmp) / "bytepiece.json"))
                peer_tokens = _bytepiece_tokens(Path(tmp) / "bytepiece.json", held_out)
                peer_bpt = held_bytes / max(peer_tokens, 1)
                rows.append(Measurement("bytepiece_train", dataset, "bytepiece (Su Jianlin, 1 worker)", 1, [peer_s],
                                        size, notes=f"held-out bytes/token {peer_bpt:.3f}; CPU {peer_cpu:.1f} s; "
                                                    "no pre-splitting, NFC",
                                        extra={"bytes_per_token": peer_bpt, "cpu_seconds": peer_cpu}))

            import sentencepiece as spm

            start = time.perf_counter()
            train_sentencepiece(path, Path(tmp) / "sp", vocab, 0.9995, by_script=True)
            sp_s = time.perf_counter() - start
            sp = spm.SentencePieceProcessor(model_file=str(Path(tmp) / "sp.model"))
            sp_tokens = sum(len(ids) for ids in sp.encode([line.decode("utf-8", "replace") for line in held_out]))
            sp_bpt = held_bytes / max(sp_tokens, 1)
            rows.append(Measurement("bytepiece_train", dataset, "sentencepiece BPE", threads, [sp_s], size,
                                    notes=f"held-out bytes/token {sp_bpt:.3f} (ours {100 * (ours_bpt / sp_bpt - 1):+.1f}%)",
                                    extra={"bytes_per_token": sp_bpt}))
    return rows


if __name__ == "__main__":
    from benchmarks.harness import report

    print(report(run(Config(quick=bool(os.environ.get("QUICK")))), Config().out_dir, "bytepiece_train"))
