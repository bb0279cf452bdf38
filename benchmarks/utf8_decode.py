"""UTF-8 decode: gpu_text (Numba, CUDA) vs CPython's bytes.decode and a vectorised numpy decoder.

All produce every character of every line; gpu_text also produces each character's byte offset.
Throughput is input bytes per second.
"""
from __future__ import annotations

import numpy as np

from benchmarks.corpora import load_lines
from benchmarks.harness import Config, Measurement, cpu_thread_counts, measure, on_gpu
from gpu_text import TextBatch, utf8
from gpu_text.backend import get_backend

PEER = "CPython bytes.decode"


def numpy_decode(data: np.ndarray) -> np.ndarray:
    """Codepoints of well-formed UTF-8 with numpy array operations (no validation)."""
    lead = np.flatnonzero((data & 0xC0) != 0x80)
    b0 = data[lead].astype(np.uint32)
    length = 1 + (b0 >= 0xC0) + (b0 >= 0xE0) + (b0 >= 0xF0)
    padded = np.concatenate([data, np.zeros(3, np.uint8)]).astype(np.uint32)
    cp = np.where(length == 1, b0, np.where(length == 2, b0 & 0x1F, np.where(length == 3, b0 & 0x0F, b0 & 0x07)))
    for k in (1, 2, 3):
        more = length > k
        cp = np.where(more, (cp << 6) | (padded[lead + k] & 0x3F), cp)
    return cp


def run(config: Config) -> list[Measurement]:
    rows: list[Measurement] = []
    limit = 4_000_000 if config.quick else 64_000_000
    for dataset in ("zh", "en"):
        lines, source = load_lines(dataset, limit)
        batch = TextBatch.from_strings(lines)
        raw = batch.data.tobytes()
        name = f"{dataset} ({source}, {batch.nbytes / 1e6:.1f} MB, {len(batch)} lines)"
        r = config.repeat

        rows.append(Measurement("utf8_decode", name, PEER, 1,
                                measure(lambda: [line.decode("utf-8", "replace") for line in lines], r),
                                batch.nbytes, notes="per line, to str"))
        rows.append(Measurement("utf8_decode", name, "CPython bytes.decode (one buffer)", 1,
                                measure(lambda: raw.decode("utf-8", "replace"), r), batch.nbytes,
                                peer=PEER, notes="whole batch as one str"))
        rows.append(Measurement("utf8_decode", name, "CPython decode to codepoints", 1,
                                measure(lambda: np.frombuffer(raw.decode("utf-8", "replace").encode("utf-32-le"), np.uint32), r),
                                batch.nbytes, peer=PEER, notes="one buffer, str -> UTF-32 -> numpy"))
        rows.append(Measurement("utf8_decode", name, "numpy (vectorised)", 1,
                                measure(lambda: numpy_decode(batch.data), r), batch.nbytes, peer=PEER,
                                notes="no validation"))

        cpu = get_backend("cpu")
        for threads in cpu_thread_counts():
            rows.append(Measurement("utf8_decode", name, "gpu_text[cpu] decode", threads,
                                    measure(lambda: utf8.decode(batch, cpu), r), batch.nbytes, peer=PEER,
                                    notes="codepoints + byte offsets, validated"))
            rows.append(Measurement("utf8_decode", name, "gpu_text[cpu] validate", threads,
                                    measure(lambda: utf8.validate(batch, cpu), r), batch.nbytes, peer=PEER))

        gpu_setup = on_gpu(batch)
        if gpu_setup is not None:
            gpu, on_device, sync = gpu_setup
            rows.append(Measurement("utf8_decode", name, "gpu_text[cuda] decode (on device)", "GPU",
                                    measure(lambda: utf8.decode(on_device, gpu), r, sync), batch.nbytes, peer=PEER,
                                    notes="input and output stay on the GPU"))
            rows.append(Measurement("utf8_decode", name, "gpu_text[cuda] validate (on device)", "GPU",
                                    measure(lambda: utf8.validate(on_device, gpu), r, sync), batch.nbytes, peer=PEER))
            rows.append(Measurement("utf8_decode", name, "gpu_text[cuda] decode (host to host)", "GPU",
                                    measure(lambda: utf8.decode(batch, gpu).codepoints.to_numpy(), r, sync),
                                    batch.nbytes, peer=PEER, notes="includes both PCIe copies"))
    return rows
