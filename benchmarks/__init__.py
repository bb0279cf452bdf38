"""Benchmarks: gpu_text on every available backend against its peers, same data, same run.

Run ``python -m benchmarks --help``. Each benchmark module exposes ``run(config) -> list[Measurement]``.
"""
