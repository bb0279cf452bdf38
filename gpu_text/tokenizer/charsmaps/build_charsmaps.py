"""Rebuild the shipped character maps from sentencepiece itself.

Usage (from the repository root, with ``sentencepiece`` installed — it is in the ``test`` extra)::

    python gpu_text/tokenizer/charsmaps/build_charsmaps.py          # writes <RULE>.npz beside this file
    python gpu_text/tokenizer/charsmaps/build_charsmaps.py --check  # exit 1 if a file differs

For each rule (NFKC, NMT_NFKC, NFKC_CF, NMT_NFKC_CF) it asks ``sentencepiece.SentencePieceNormalizer
(rule_name=...)`` for its serialized ``NormalizerSpec``, takes field 2 (``precompiled_charsmap``,
the blob sentencepiece compiled into its library) with the project's own protobuf reader, decodes
the darts-clone trie in it with :func:`gpu_text.tokenizer.normalizer.decode_precompiled_charsmap`
(the decoder that also reads the charsmap of an imported ``.model``), and writes the (source,
target) byte pairs with :func:`gpu_text.tokenizer.normalizer.save_charsmap` as ``<RULE>.npz``
(compressed, four arrays: ``sources``, ``source_lengths``, ``targets``, ``target_lengths``).

The files record the sentencepiece version they came from in ``SOURCE.txt``. This folder is not
a package, so importing gpu_text never imports sentencepiece.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RULES = {"NFKC": "nfkc", "NMT_NFKC": "nmt_nfkc", "NFKC_CF": "nfkc_cf", "NMT_NFKC_CF": "nmt_nfkc_cf"}


def sentencepiece_pairs(rule: str) -> list[tuple[bytes, bytes]]:
    """The (source, target) pairs of sentencepiece's precompiled charsmap for ``rule``."""
    import sentencepiece

    from gpu_text.tokenizer.normalizer import decode_precompiled_charsmap
    from gpu_text.tokenizer.sentencepiece_model import read_normalizer_spec

    spec = sentencepiece.SentencePieceNormalizer(rule_name=RULES[rule]).serialized_normalizer_spec()
    return decode_precompiled_charsmap(read_normalizer_spec(spec)["precompiled_charsmap"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped files instead of writing")
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: beside this script)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE.parents[2]))
    import sentencepiece

    from gpu_text.tokenizer.normalizer import load_charsmap, save_charsmap

    status = 0
    for rule in RULES:
        pairs = sentencepiece_pairs(rule)
        path = args.out / f"{rule}.npz"
        if args.check:
            same = path.exists() and load_charsmap(path) == pairs
            print(f"{rule}: {len(pairs)} pairs, {'same as' if same else 'DIFFERENT from'} {path}")
            status |= not same
        else:
            save_charsmap(pairs, path)
            print(f"{rule}: {len(pairs)} pairs -> {path}")
    if not args.check:
        (args.out / "SOURCE.txt").write_text(
            f"Character maps decoded from the precompiled charsmaps of sentencepiece {sentencepiece.__version__}\n"
            "(Apache-2.0) by build_charsmaps.py in this folder; see its docstring.\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
