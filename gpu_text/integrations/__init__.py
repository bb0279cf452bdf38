"""Adapters to the data tools users already run: :mod:`~gpu_text.integrations.hf` for Hugging Face
``datasets`` (``Dataset.map(..., batched=True)``), :mod:`~gpu_text.integrations.ray` for Ray Data
(``map_batches`` on an actor pool, Megatron shards per block). Each imports its tool only when used.

>>> import gpu_text.integrations.hf as hf
>>> callable(hf.batched_encoder)
True
"""
