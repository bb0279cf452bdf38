"""The main job on the bundled public-domain sample: bulk-tokenize it with the bundled BPE model
(to Parquet, streaming, on the best backend) and compare CPU, GPU (when present) and
sentencepiece. ``python -m gpu_text.demo [OUT_DIR]``."""
from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from gpu_text import TextBatch
from gpu_text.backend import cuda_unavailable_reason, get_backend
from gpu_text.timing import measure

DATA = Path(__file__).resolve().parent / "data"
SAMPLES = DATA / "samples"
MODEL = DATA / "models" / "sample-bpe-4k.txt"
REPEAT_SAMPLE = 8  # time on the sample repeated, so that launch overheads do not dominate


def _median_seconds(fn: Callable[[], object], sync: Callable[[], None] | None = None) -> float:
    return statistics.median(measure(fn, 5, sync))


def _sentencepiece_peer(sample: Path, vocab_size: int, workdir: Path):
    """A sentencepiece BPE of the same size trained on the same text, or None without sentencepiece."""
    try:
        import sentencepiece as spm
    except ImportError:
        return None
    prefix = workdir / sample.stem
    spm.SentencePieceTrainer.train(input=str(sample), model_prefix=str(prefix), model_type="bpe",
                                   vocab_size=vocab_size, byte_fallback=True, character_coverage=0.9995,
                                   normalization_rule_name="identity", minloglevel=2, num_threads=1)
    return spm.SentencePieceProcessor(model_file=f"{prefix}.model")


def run_demo(out_dir: Path) -> str:
    """Tokenize every bundled sample into ``out_dir`` and return the comparison table.

    >>> "zh-hongloumeng" in run_demo(Path(tempfile.mkdtemp()))  # doctest: +SKIP
    True
    """
    from gpu_text.tokenizer.bulk import tokenize_files
    from gpu_text.tokenizer.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_model_file(MODEL)
    best = get_backend("auto").name
    backends = ["cpu"] + (["cuda"] if cuda_unavailable_reason() is None else [])
    lines = [f"gpu_text demo: bulk-tokenize the bundled public-domain sample with the bundled BPE model "
             f"({len(tokenizer)} pieces; best backend here: {best})", ""]
    out_dir.mkdir(parents=True, exist_ok=True)
    samples = sorted(p for p in SAMPLES.glob("*.txt") if not p.name.startswith("SOURCE"))
    for sample in samples:
        summary = tokenize_files(tokenizer, [sample], out_dir / f"{sample.stem}.parquet", backend=best, progress=False)
        lines.append(f"{sample.name}: {summary['documents']} documents -> {summary['tokens']} tokens "
                     f"({summary['bytes'] / max(summary['tokens'], 1):.2f} bytes/token) -> {out_dir / sample.stem}.parquet")
    lines += ["", "| sample | implementation | MB/s | speed vs sentencepiece | tokens |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for sample in samples:
            texts = sample.read_text(encoding="utf-8").split("\n") * REPEAT_SAMPLE
            batch = TextBatch.from_strings(texts)
            mb = batch.nbytes / 1e6
            peer = _sentencepiece_peer(sample, len(tokenizer), Path(tmp))
            peer_seconds = None
            if peer is not None:
                peer_seconds = _median_seconds(lambda: peer.encode(texts))
                tokens = sum(map(len, peer.encode(texts)))
                lines.append(f"| {sample.stem} | sentencepiece (same size, same text) | {mb / peer_seconds:,.1f} | 1.00x "
                             f"| {tokens:,} |")
            for name in backends:
                be = get_backend(name)
                data, sync = batch, None
                if name == "cuda":
                    import cupy

                    data, sync = batch.to_device(cupy), cupy.cuda.get_current_stream().synchronize
                seconds = _median_seconds(lambda: tokenizer.encode(data, be), sync)
                tokens = int(tokenizer.encode(data, be).ids.values.size)
                ratio = f"{peer_seconds / seconds:.2f}x" if peer_seconds else "n/a"
                lines.append(f"| {sample.stem} | gpu_text[{name}] | {mb / seconds:,.1f} | {ratio} | {tokens:,} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out_dir = Path(argv[0]) if argv else Path("demo-output")
    print(run_demo(out_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
