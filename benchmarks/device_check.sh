#!/usr/bin/env bash
# The device check: on a GPU machine, the test suite with the real CUDA backend (differential
# tests then also compare GPU == Numba == reference) and the benchmark report, in under 8 minutes.
#
# The GPU machine has Python 3.12 with cupy-cuda13x, numba and pytest, and no internet: nothing is
# installed here; the checkout goes on PYTHONPATH. Results go to $OUT (default ./device-check-out):
# info.json, tests.log, tests.xml, bench/REPORT.md + bench/report.json (python -m benchmarks report;
# without matplotlib there, draw the plots afterwards on any machine with
# `python -m benchmarks report --render DIR/bench`), bench.log and a summary device_check.json.
# A copied tree has no .git: pass GPU_TEXT_COMMIT=$(git rev-parse HEAD) to name the commit.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/device-check-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export GPU_TEXT_DEVICE_CHECK=1          # skip (not fail) tests whose optional tools are missing here
export GPU_TEXT_SKIP_EMULATION=1        # CI runs the emulator; the GPU's minutes go to the GPU
export NUMBA_CACHE_DIR="${TMPDIR:-/tmp}/gpu_text_numba"
PY="${PYTHON:-python3}"

start=$(date +%s)
"$PY" -m gpu_text.cli info --json > "$OUT/info.json" 2> "$OUT/info.err"
cat "$OUT/info.json"

timeout 250 "$PY" -m pytest -q -m "not slow" -p no:cacheprovider -o addopts="" -ra \
    --junitxml="$OUT/tests.xml" 2>&1 | tee "$OUT/tests.log"
tests_rc=${PIPESTATUS[0]}

# One report: --quick sizes keep the peers (jieba, sentencepiece, crfsuite: CPU-bound) inside the
# 8 minutes, and the budget starts no part after 160 s (the size sweep, 1-16 MB here, stops before a
# size it estimates would end later); the report is rewritten after every part, so the timeout
# still leaves what was measured. train_tokenizer has no GPU path; word2vec and lda need peers and
# corpora the GPU machine lacks (training measures both on the GPU alone).
timeout 215 "$PY" -m benchmarks report utf8_decode segment tokenize crf scaling training --quick --repeat 3 \
    --budget 160 --out "$OUT/bench" 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}

"$PY" - "$OUT" "$tests_rc" "$bench_rc" "$start" <<'PYEOF'
import json, sys, time, xml.etree.ElementTree as ET
from pathlib import Path
out, tests_rc, bench_rc, start = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
summary = {"tests_exit_code": tests_rc, "bench_exit_code": bench_rc, "seconds": round(time.time() - start)}
try:
    suite = ET.parse(out / "tests.xml").getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    summary["tests"] = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
except Exception as exc:
    summary["tests"] = f"no junit report ({exc})"
summary["info"] = json.loads((out / "info.json").read_text() or "{}") if (out / "info.json").exists() else None
try:
    report = json.loads((out / "bench" / "report.json").read_text())
    summary["benchmarks"] = {e["name"]: e for e in report["benchmarks"]}
    summary["report_parts"] = {e["name"]: e["status"] + (f": {e['reason']}" if e.get("reason") else "")
                               for e in report["benchmarks"]}
except Exception as exc:
    summary["benchmarks"] = f"no report ({exc})"
(out / "device_check.json").write_text(json.dumps(summary, indent=2))
print(json.dumps({k: summary.get(k) for k in ("tests_exit_code", "bench_exit_code", "seconds", "tests", "report_parts")}))
PYEOF
exit $(( tests_rc != 0 || bench_rc != 0 ))
