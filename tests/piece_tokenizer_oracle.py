"""The seed's own trainer as an oracle: PieceTokenizer's ``piece-tokenizer count`` CLI.

The PyPI wheel of ``piece-tokenizer`` 0.1.0 holds only the tokenizers (its ``_core`` extension exports
no counter: no ``count``/``train`` entry point, no ``*Counter`` symbol); its source distribution holds
the whole C++ project, counters and CLI included. ``python -m tests.piece_tokenizer_oracle`` fetches
that sdist with pip and builds the CLI with CMake into ``.cache/piece-tokenizer`` (a minute or two;
network, cmake and a C++17 compiler needed); ``PIECE_TOKENIZER_CLI`` may name a CLI built elsewhere.
Tests that need it skip, saying how to build it, when it is absent.

The module also builds ``probe``: a few lines of C++ that print what libstdc++ does with
``std::hash<std::string>``, ``unordered_map`` iteration and ``std::sort``, which
:mod:`gpu_text.tokenizer.cxx_order` reproduces.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
CACHE = REPO / ".cache" / "piece-tokenizer"
SOURCE = CACHE / f"piece_tokenizer-{VERSION}"
CLI = SOURCE / "build" / "piece-tokenizer"
HOW = "build it with `python -m tests.piece_tokenizer_oracle` (pip download of the sdist, cmake, g++)"

PROBE_SOURCE = r"""
#include <algorithm>
#include <iostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
// stdin: lines "key<TAB>count"; stdout: each key's hash, the map's iteration order, the sorted order
int main() {
  std::vector<std::pair<std::string, int>> in;
  std::string line;
  while (std::getline(std::cin, line)) {
    auto tab = line.rfind('\t');
    in.emplace_back(line.substr(0, tab), std::stoi(line.substr(tab + 1)));
  }
  for (auto& p : in) std::cout << std::hash<std::string>{}(p.first) << "\n";
  std::cout << "--\n";
  std::unordered_map<std::string, int> m;
  for (auto& p : in) m[p.first] += p.second;
  std::vector<std::pair<std::string, int>> v(m.begin(), m.end());
  for (auto& p : v) std::cout << p.first << "\n";
  std::cout << "--\n";
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (auto& p : v) std::cout << p.first << "\n";
}
"""


def cli_path() -> Path | None:
    """The oracle CLI, or None when it is not built."""
    named = os.environ.get("PIECE_TOKENIZER_CLI")
    for path in ([Path(named)] if named else []) + [CLI]:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def probe_path() -> Path | None:
    """The libstdc++ probe, compiled on first use; None without a C++ compiler."""
    binary = CACHE / "probe"
    if binary.is_file():
        return binary
    compiler = shutil.which("g++")
    if compiler is None:
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    source = CACHE / "probe.cc"
    source.write_text(PROBE_SOURCE)
    done = subprocess.run([compiler, "-std=c++17", "-O1", str(source), "-o", str(binary) + ".tmp"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    os.replace(str(binary) + ".tmp", binary)
    return binary


def build() -> Path:
    """Fetch the sdist (when not already here) and build the CLI; returns its path."""
    CACHE.mkdir(parents=True, exist_ok=True)
    archive = CACHE / f"piece_tokenizer-{VERSION}.tar.gz"
    if not archive.is_file():
        subprocess.run([sys.executable, "-m", "pip", "download", f"piece-tokenizer=={VERSION}", "--no-binary",
                        ":all:", "--no-deps", "-d", str(CACHE)], check=True)
    if not SOURCE.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
    build_dir = SOURCE / "build"
    # the test extras install CMake's wheel into the environment, whose bin/ need not be on PATH
    beside = Path(sys.executable).parent / "cmake"
    cmake = str(beside) if beside.is_file() else shutil.which("cmake") or "cmake"
    subprocess.run([cmake, "-S", str(SOURCE), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                    "-DBUILD_TESTING=OFF"], check=True)
    subprocess.run([cmake, "--build", str(build_dir), "--target", "piece-tokenizer", "-j",
                    str(os.cpu_count() or 1)], check=True)
    return CLI


if __name__ == "__main__":
    print(build())
