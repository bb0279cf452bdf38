"""``gpu-text warmup`` and the first-run notice: real subprocesses with a fresh, empty Numba cache
(cheap commands only: ``info`` compiles three functions), and where Numba puts the cache when the
package folder is read-only."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from gpu_text.cli import main
from gpu_text.warmup import NOTICE, NOTICE_VAR, WARMUPS, CompileNotice, compile_notice, warmup

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cache: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != NOTICE_VAR}
    environment.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(REPO), **env)
    return subprocess.run([sys.executable, "-m", "gpu_text.cli", *args], capture_output=True, text=True,
                          env=environment, cwd=REPO, timeout=300)


def test_warmup_compiles_into_the_given_cache_once(tmp_path):
    cache = tmp_path / "numba"
    first = run_cli("warmup", "--commands", "info", "score", cache=cache)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.strip().splitlines()
    assert lines[0].startswith("warmup info: ") and not lines[0].endswith(" 0 functions compiled"), lines
    assert lines[1].startswith("warmup score: "), lines  # its own kernels: the text reader's
    assert lines[2].startswith("warmup: ") and str(cache) in lines[2], lines
    assert NOTICE not in first.stderr  # the warm-up reports itself
    assert list(cache.rglob("*.nbi")) and list(cache.rglob("*.nbc"))
    again = run_cli("warmup", "--commands", "info", "score", cache=cache)
    assert again.returncode == 0, again.stderr
    assert all(line.endswith(", 0 functions compiled") for line in again.stderr.splitlines()[:2]), again.stderr


def test_the_notice_appears_on_a_cold_cache_only(tmp_path):
    cache = tmp_path / "numba"
    cold = run_cli("info", cache=cache)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.count(NOTICE) == 1, cold.stderr
    assert "numba_threading_layer" in cold.stdout
    warm = run_cli("info", cache=cache)
    assert warm.returncode == 0 and NOTICE not in warm.stderr, warm.stderr
    quiet = run_cli("info", cache=tmp_path / "other", **{NOTICE_VAR: "0"})
    assert quiet.returncode == 0 and NOTICE not in quiet.stderr, quiet.stderr


def test_compile_notice_says_it_once_and_only_when_compiling(monkeypatch):
    monkeypatch.delenv(NOTICE_VAR, raising=False)  # the suite may silence it for the other tests

    @njit  # not cached: a compile every time this test runs
    def double(x):
        return 2 * x

    stream = io.StringIO()
    with compile_notice("demo", stream) as notice:
        assert double(np.arange(3)).tolist() == [0, 2, 4]
        double(2.5)  # a second compile: still one line
    assert stream.getvalue() == NOTICE + "\n" and notice.compiles >= 2
    stream = io.StringIO()
    with compile_notice("demo", stream) as notice:
        double(np.arange(3))  # compiled already: nothing to say
    assert stream.getvalue() == "" and notice.compiles == 0
    with compile_notice("warmup", stream) as notice:
        assert notice is None
    monkeypatch.setenv(NOTICE_VAR, "0")
    with compile_notice("demo", stream) as notice:
        assert notice is None


def test_compile_notice_is_thread_safe():
    notice = CompileNotice(io.StringIO())
    import threading

    threads = [threading.Thread(target=notice.on_start, args=(None,)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert notice.compiles == 8 and notice.stream.getvalue().count(NOTICE) == 1


def test_warmup_bad_input(capsys):
    with pytest.raises(ValueError, match="no warm-up for nope"):
        warmup(main, ["nope"])
    assert main(["warmup", "--commands", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpu-text warmup: error: argument --commands"), err


def test_every_command_has_a_warmup_and_every_run_parses(tmp_path):
    from gpu_text.cli import build_parser
    from gpu_text.warmup import BACKEND_OPTION, _inputs

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) - {"warmup"} == set(WARMUPS)
    paths = _inputs(tmp_path)
    for name, runs in WARMUPS.items():
        for argv in runs:
            argv = [arg.format(**paths) for arg in argv] + (["--backend", "cpu"] if name in BACKEND_OPTION else [])
            assert callable(parser.parse_args(argv).run), argv


READ_ONLY_PROBE = textwrap.dedent("""
    import json, sys
    from numba.core import caching

    def read_only(self):  # what a package folder the user cannot write gives
        raise PermissionError(13, "Permission denied", self.get_cache_path())

    caching.InTreeCacheLocator.ensure_cache_path = read_only
    from gpu_text.backend import get_backend
    import numpy as np

    op = get_backend("cpu").op("utf8", "utf8_string_stats")
    chars, errors = op(np.frombuffer(b"ab\\xff", np.uint8), np.array([0, 3]))
    print(json.dumps({"path": op.stats.cache_path, "hits": sum(op.stats.cache_hits.values()),
                      "misses": sum(op.stats.cache_misses.values()), "chars": chars.tolist()}))
""")


def test_a_read_only_package_caches_under_the_user_cache_folder(tmp_path):
    """With no $NUMBA_CACHE_DIR and a package folder that is not writable (a wheel installed by
    root), Numba keeps the compiled kernels in $XDG_CACHE_HOME/numba, and the next run loads them."""
    import json

    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    environment.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(REPO))
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", READ_ONLY_PROBE], capture_output=True, text=True,
                              env=environment, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    first, second = runs
    assert first["path"].startswith(str(tmp_path / "xdg" / "numba")), first
    assert first["chars"] == [3] and first["misses"] == 1 and first["hits"] == 0
    assert second["path"] == first["path"] and second["hits"] == 1 and second["misses"] == 0
    assert list(Path(first["path"]).glob("*.nbi"))
