#!/usr/bin/env bash
# The device check: on a GPU machine, the test suite with the real CUDA backend (differential
# tests then also compare GPU == Numba == reference) and the benchmark report, in under 8 minutes.
#
# The GPU machine has Python 3.12 with cupy-cuda13x, numba and pytest, and no internet: nothing is
# installed here; the checkout goes on PYTHONPATH. Results go to $OUT (default ./device-check-out):
# info.json, tests.log, tests.xml, device_kernels.md + .json + .log (python -m benchmarks.device_kernels:
# achieved GB/s of each case against a 4 GiB device copy, launches, syncs, kernel and glue time, every
# kernel's registers), kernels.log, bench/REPORT.md + bench/report.json (python -m benchmarks report;
# without matplotlib there, draw the plots afterwards on any machine with
# `python -m benchmarks report --render DIR/bench`), bench.log and a summary device_check.json.
# A copied tree has no .git: pass GPU_TEXT_COMMIT=$(git rev-parse HEAD) to name the commit.
#
# Time (8 minutes in all, $GPU_TEXT_CHECK_SECONDS=470 of them budgeted): the tests at most 180 s
# (250 before the kernel table), the kernel table at most 180 s (it stops early when done), the
# report what is left, at most 215 s (skipped under 60 s).
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
TOTAL="${GPU_TEXT_CHECK_SECONDS:-470}"
left() { echo $(( TOTAL - ($(date +%s) - start) )); }
"$PY" -m gpu_text.cli info --json > "$OUT/info.json" 2> "$OUT/info.err"
cat "$OUT/info.json"

timeout 180 "$PY" -m pytest -q -m "not slow" -p no:cacheprovider -o addopts="" -ra \
    --junitxml="$OUT/tests.xml" 2>&1 | tee "$OUT/tests.log"
tests_rc=${PIPESTATUS[0]}

# The kernel table: one worker process per group of cases, each case under its own budget, the whole
# under --budget (the driver kills what overruns and records it); the timeout is a safety net.
kernels_s=$(( $(left) - 60 )); (( kernels_s > 180 )) && kernels_s=180
if (( kernels_s >= 30 )); then
    timeout "$kernels_s" "$PY" -m benchmarks.device_kernels --out "$OUT" --budget $(( kernels_s - 10 )) \
        2>&1 | tee "$OUT/kernels.log"
    kernels_rc=${PIPESTATUS[0]}
else
    echo "kernel table skipped: ${kernels_s} s left" | tee "$OUT/kernels.log"
    kernels_rc=124
fi

# One report: --quick sizes keep the peers (jieba, sentencepiece, crfsuite: CPU-bound) inside the
# 8 minutes, and the budget starts no part after 160 s (the size sweep, 1-16 MB here, stops before a
# size it estimates would end later); the report is rewritten after every part, so the timeout
# still leaves what was measured. train_tokenizer has no GPU path; word2vec and lda need peers and
# corpora the GPU machine lacks (training measures both on the GPU alone).
bench_s=$(left); (( bench_s > 215 )) && bench_s=215
if (( bench_s >= 60 )); then
    timeout "$bench_s" "$PY" -m benchmarks report utf8_decode segment tokenize crf scaling training --quick \
        --repeat 3 --budget $(( bench_s - 55 )) --out "$OUT/bench" 2>&1 | tee "$OUT/bench.log"
    bench_rc=${PIPESTATUS[0]}
else
    echo "report skipped: ${bench_s} s left" | tee "$OUT/bench.log"
    bench_rc=0
fi

"$PY" - "$OUT" "$tests_rc" "$bench_rc" "$start" "$kernels_rc" <<'PYEOF'
import json, sys, time, xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
out, tests_rc, bench_rc, start = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
kernels_rc = int(sys.argv[5])
summary = {"tests_exit_code": tests_rc, "bench_exit_code": bench_rc, "kernels_exit_code": kernels_rc,
           "seconds": round(time.time() - start)}
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
try:
    table = json.loads((out / "device_kernels.json").read_text())
    device = {k: v for k, v in table["device"].items() if k != "properties"}
    summary["device_kernels"] = {"ceiling_gb_per_s": table["ceiling_gb_per_s"], "device": device,
                                 "table": table["table"], "kernels": table["kernels"].get("kernels", []),
                                 "kernels_status": table["kernels"].get("status")}
    summary["kernel_cases"] = dict(Counter(row["status"] for row in table["table"]))
except Exception as exc:
    summary["device_kernels"] = f"no kernel table ({exc})"
(out / "device_check.json").write_text(json.dumps(summary, indent=2))
print(json.dumps({k: summary.get(k) for k in ("tests_exit_code", "kernels_exit_code", "bench_exit_code", "seconds",
                                              "tests", "kernel_cases", "report_parts")}))
PYEOF
exit $(( tests_rc != 0 || bench_rc != 0 || kernels_rc != 0 ))
