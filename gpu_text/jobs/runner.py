"""A sharded job from start to end (``gpu-text tokenize ... --output-dir DIR``): plan the shards
(:mod:`~gpu_text.jobs.shards`), take the directory's lock, start or resume the manifest
(:mod:`~gpu_text.jobs.manifest`), remove what a killed run left, tokenize the shards that are
not complete on the workers (:mod:`~gpu_text.jobs.workers`) and record each in the manifest as
it finishes.

Exactly once, whenever the job dies: a shard's outputs are renamed into place whole and only
then recorded; on ``resume``, a shard whose entry is ``done`` and whose files match their
checksums is kept, every other shard has whatever it left removed and is tokenized again from
its first document. A shard whose input cannot be read stops the job (``on_error="stop"``, the
error naming it), or is recorded as ``skipped`` and reported (``on_error="skip"``; a resumed job
tries it again).

>>> import os, tempfile
>>> from gpu_text.demo import MODEL
>>> d = tempfile.mkdtemp()
>>> for name in ("a.txt", "b.txt"):
...     _ = open(os.path.join(d, name), "w").write("hello world\\nbye\\n")
>>> summary = run_sharded_job(str(MODEL), [os.path.join(d, "*.txt")], os.path.join(d, "out"),
...                           ShardSettings(backend="cpu"), progress=False)
>>> summary["done"], summary["documents"], sorted(os.listdir(os.path.join(d, "out")))
(2, 4, ['.gpu-text.lock', 'a.parquet', 'b.parquet', 'manifest.json'])
>>> run_sharded_job(str(MODEL), [os.path.join(d, "*.txt")], os.path.join(d, "out"), ShardSettings(backend="cpu"),
...                 resume=True, progress=False)["resumed"]
2
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from gpu_text.jobs.manifest import MANIFEST, Manifest, file_sha256, input_identity, job_lock
from gpu_text.jobs.pieces import ShardSettings
from gpu_text.jobs.shards import Shard, existing_outputs, expand_inputs, plan_shards, remove_outputs, remove_temporaries
from gpu_text.jobs.workers import InlinePool, ProcessPool, peak_rss_mb, start_method, worker_environments

ON_ERROR = ("stop", "skip")


def job_options(model: str, settings: ShardSettings) -> dict[str, Any]:
    """What decides a job's outputs, as the manifest keeps it: the model's SHA-256 and every
    setting but the chunk size and the backend (which change neither the ids nor their order).

    >>> from gpu_text.demo import MODEL
    >>> sorted(job_options(str(MODEL), ShardSettings()))[:4]
    ['add_bos', 'add_eos', 'append_eod', 'field']
    """
    options = settings.to_dict()
    for key in ("chunk_bytes", "backend", "max_document_bytes"):
        options.pop(key)
    return {"model_sha256": file_sha256(model), **options}


def run_sharded_job(model: str, inputs: Sequence[str], output_dir: str, settings: ShardSettings,
                    resume: bool = False, workers: int = 1, devices: Sequence[str] | None = None,
                    on_error: str = "stop", progress: bool = True) -> dict[str, Any]:
    """Tokenize every input (files, globs, directories: :func:`gpu_text.jobs.shards.expand_inputs`)
    into its shard in ``output_dir`` with ``workers`` processes (1: this one), or one per GPU of
    ``devices``; returns the job's summary (see the module docstring; ``worker_start`` says how
    the workers were started: ``inline``, ``fork`` or ``spawn``, :func:`gpu_text.jobs.workers.start_method`).
    The model is loaded once per worker (this process, or each spawned worker process; once here
    for forked workers) and checked against the settings before anything is written."""
    from gpu_text.outputs import check_options

    s = settings
    check_options(s.output_format, s.with_offsets, s.append_eod, s.pack)
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {', '.join(ON_ERROR)}, got {on_error!r}")
    if s.shard_bytes is not None and s.shard_bytes < 1:
        raise ValueError(f"shard_bytes must be at least 1, got {s.shard_bytes}")
    if devices is not None:
        workers = len(devices)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    files = expand_inputs(inputs)
    output_dir = os.path.abspath(output_dir)
    shards = plan_shards(files, output_dir, s.output_format, s.shard_bytes)
    sizes = {shard.index: os.path.getsize(shard.input) for shard in shards}  # a missing input fails here
    _check_places(inputs, shards, model, output_dir)
    options = job_options(model, s)
    plan = [(shard.name, shard.input) for shard in shards]
    start = time.perf_counter()  # the job's time includes starting the workers
    pool = _start_pool(model, s, workers, devices)  # loads the model: its errors come before any output
    try:
        return _run_job(pool, shards, sizes, plan, options, output_dir, resume, on_error, progress, start)
    finally:
        pool.close()


def _start_pool(model: str, settings: ShardSettings, workers: int, devices: Sequence[str] | None) -> Any:
    if workers == 1 and devices is None:
        return InlinePool(model, settings)
    return ProcessPool(model, settings, worker_environments(workers, devices), start_method(settings, devices))


def _run_job(pool: Any, shards: list[Shard], sizes: dict[int, int], plan: list[tuple[str, str]],
             options: dict[str, Any], output_dir: str, resume: bool, on_error: str, progress: bool,
             start: float) -> dict[str, Any]:
    """The job once the workers are ready: lock, manifest, leftovers, the shards to do."""
    os.makedirs(output_dir, exist_ok=True)
    with job_lock(output_dir):
        manifest = _open_manifest(os.path.join(output_dir, MANIFEST), options, plan, shards, resume)
        directories = {output_dir} | {os.path.dirname(os.path.abspath(shard.piece_output(0))) for shard in shards}
        remove_temporaries(sorted(directories))  # only a killed run of this job can have left them
        todo = [shard for shard in shards if not (resume and manifest.complete(shard.index))]
        for shard in todo:
            remove_outputs(existing_outputs(shard))
            manifest.record(shard.index, status="pending")
        manifest.save()
        try:
            outcome = _run(pool, todo, manifest, on_error, sum(sizes[t.index] for t in todo), progress)
        finally:
            remove_temporaries(sorted(directories))
        seconds = time.perf_counter() - start
    done = [manifest.entries[shard.index] for shard in todo if manifest.entries[shard.index]["status"] == "done"]
    read = sum(sizes[shard.index] for shard in todo)
    return {"output_dir": output_dir, "manifest": manifest.path, "shards": len(shards), "done": len(done),
            "resumed": len(shards) - len(todo), "skipped": outcome["skipped"],
            "documents": sum(e["documents"] for e in done), "tokens": sum(e["tokens"] for e in done),
            "bytes": read, "seconds": round(seconds, 3),
            "mb_per_s": round(read / 1e6 / seconds, 2) if seconds > 0 else None,
            "workers": outcome["workers"], "worker_start": pool.start, "peak_rss_mb": peak_rss_mb(),
            "totals": manifest.totals(), "complete": manifest.to_dict()["complete"]}


def _check_places(specs: Sequence[str], shards: Sequence[Shard], model: str, output_dir: str) -> None:
    """Refuse an output directory inside an input directory (its shards would be read as inputs
    next time) and an output that is an input or the model."""
    real_dir = os.path.realpath(output_dir)
    for spec in map(str, specs):
        if os.path.isdir(spec) and (real_dir + os.sep).startswith(os.path.realpath(spec) + os.sep):
            raise ValueError(f"{output_dir}: the output directory is inside the input directory {spec}; choose "
                             "another --output-dir")
    sources = {os.path.realpath(shard.input): shard.input for shard in shards}
    sources.setdefault(os.path.realpath(model), model)
    for shard in shards:
        for path in shard.piece_paths(0):
            if os.path.realpath(path) in sources:
                raise ValueError(f"{path}: the output is the input {sources[os.path.realpath(path)]}; choose another "
                                 "--output-dir")


def _open_manifest(path: str, options: dict[str, Any], plan: list[tuple[str, str]], shards: Sequence[Shard],
                   resume: bool) -> Manifest:
    if os.path.exists(path):
        manifest = Manifest.load(path)
        if not resume:
            totals = manifest.totals()
            raise ValueError(f"{os.path.dirname(path)}: holds the manifest of a job ({totals['done']} of "
                             f"{totals['shards']} shards done): add --resume to continue it, or choose another "
                             "--output-dir")
        manifest.check_resumable(options, plan)
        return manifest
    for shard in shards:  # no manifest says what they are: never overwrite them
        for existing in existing_outputs(shard):
            raise ValueError(f"{existing}: exists, and {os.path.dirname(path)} has no job manifest to say what it "
                             "is; remove it or choose another --output-dir")
    return Manifest(path, options, plan)


def _run(pool: Any, todo: list[Shard], manifest: Manifest, on_error: str, total: int,
         progress: bool) -> dict[str, Any]:
    """Tokenize ``todo`` on the pool, recording each result in the manifest as it comes (on the
    in-process worker's writer thread: the next shard is encoded meanwhile)."""
    from gpu_text.cli_helpers import progress_bar

    skipped: list[dict[str, str]] = []
    # what each worker did and saw (its CUDA_VISIBLE_DEVICES, its Numba threads), for the summary only
    report: list[dict[str, Any]] = [{"worker": n, "shards": [], "peak_rss_mb": None, "device": None,
                                     "numba_threads": None} for n in range(pool.workers)]
    if not todo:
        return {"skipped": skipped, "workers": report}
    by_index = {shard.index: shard for shard in todo}

    def record(number: int, result: dict[str, Any]) -> None:
        shard = by_index[result["index"]]
        if result["kind"] == "done":
            manifest.record(shard.index, **result["entry"])
            report[number]["shards"].append(shard.name)
            report[number].update({key: result[key] for key in ("peak_rss_mb", "device", "numba_threads")})
        elif result["input_error"] and on_error == "skip":
            manifest.record(shard.index, status="skipped", error=result["error"], **_identity(shard.input))
            skipped.append({"shard": shard.name, "input": shard.input, "error": result["error"]})
        else:
            error = result["error"]
            where = f"shard {shard.name}" + ("" if shard.input in error else f" ({shard.input})")
            raise ValueError(f"{where}: {error}")
        manifest.save()

    with progress_bar(total, "tokenize") if progress else _NoBar() as bar:
        pool.run(todo, bar.update, record)
    if isinstance(pool, InlinePool):
        report[0]["peak_rss_mb"] = peak_rss_mb()
    return {"skipped": skipped, "workers": report}


def _identity(path: str) -> dict[str, int]:
    try:
        return input_identity(path)
    except OSError:
        return {}


class _NoBar:
    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, n: int) -> None:
        pass


__all__ = ["ON_ERROR", "job_options", "run_sharded_job"]
