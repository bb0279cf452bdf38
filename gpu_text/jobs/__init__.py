"""Sharded, resumable, multi-worker tokenizing jobs: ``gpu-text tokenize --model M IN... --output-dir DIR``.

Many input shards (files, globs, directories) become one output shard each in ``DIR`` (or
numbered pieces of a chosen size), with ``DIR/manifest.json`` saying what each shard holds and
its files' checksums; ``--resume`` continues a job killed at any moment, every document written
exactly once; ``--workers N`` / ``--devices 0,1`` spread the shards over processes.

=============  ================================================================
module         job
=============  ================================================================
``shards``     the inputs in order, each shard's output names, leftovers
``manifest``   the manifest: options, shard entries, checksums; the job lock
``pieces``     one shard through the encoder into its output pieces
``workers``    this process or worker processes, shards handed out as they free up
``runner``     the job: plan, lock, resume, dispatch, record
=============  ================================================================

>>> from gpu_text.jobs import run_sharded_job, ShardSettings
>>> ShardSettings().output_format
'parquet'
"""
from __future__ import annotations

from gpu_text.jobs.pieces import ShardSettings
from gpu_text.jobs.runner import run_sharded_job

__all__ = ["ShardSettings", "run_sharded_job"]
