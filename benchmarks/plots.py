"""The PNG plots of the benchmark report (``python -m benchmarks report``), drawn with matplotlib's
Agg backend from the report's JSON records alone, so a report written on a machine without
matplotlib (the GPU machine) is drawn later from its ``report.json`` (``--render DIR``).

Three kinds: throughput of every implementation per benchmark (a panel per dataset, each bar
labelled with its speed against its peer), throughput against input size (in-process and through
the CLI in a fresh process), and the training curves the benchmarks returned.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# what a row's "MB/s" counts where its input_bytes is not bytes (see each benchmark's module notes)
UNITS = {"crf": "M characters/s (per L-BFGS iteration)", "lda": "M tokens/s (tokens x sweeps)",
         "word2vec": "M words/s (words x epochs)", "training": "M words or tokens/s (x epochs or sweeps)"}
MAX_PANELS = 10  # datasets drawn per benchmark; the table has them all
MAX_BARS = 16  # rows drawn per dataset
CLI_TARGET = 0.85  # issue 15: the CLI end to end reaches 85% of in-process throughput on 1 GB


def available() -> str | None:
    """None when matplotlib can draw here, else why not.

    >>> available() is None or "matplotlib" in available()
    True
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display on a server or the GPU machine
        import matplotlib.pyplot  # noqa: F401
    except ImportError as exc:
        return f"matplotlib is not installed here ({exc})"
    return None


def unit_of(benchmark: str) -> str:
    """The throughput unit of ``benchmark``'s rows.

    >>> unit_of("lda"), unit_of("utf8_decode")
    ('M tokens/s (tokens x sweeps)', 'MB/s')
    """
    return UNITS.get(benchmark, "MB/s")


def _colour(implementation: str) -> str:
    if implementation.startswith("gpu_text[cuda]"):
        return "#2ca02c"
    if implementation.startswith("gpu_text"):
        return "#1f77b4"
    return "#9a9a9a"  # a peer


def _label(record: dict[str, Any]) -> str:
    threads = record["threads"]
    where = "GPU" if threads == "GPU" or not str(threads).isdigit() else f"{threads} thr"
    name = record["implementation"]
    return f"{name[:48]}… ({where})" if len(name) > 49 else f"{name} ({where})"


def _by_dataset(records: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("bytes_per_s") is not None and r["bytes_per_s"] > 0:
            groups.setdefault(r["dataset"], []).append(r)
    return groups


def throughput_plot(benchmark: str, records: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Horizontal bars of every row's throughput, a panel per dataset, each bar labelled with its
    value and its speed against its peer; None (nothing written) when no row has a throughput.

    >>> import tempfile; from pathlib import Path
    >>> rows = [{"dataset": "d", "implementation": "gpu_text[cpu]", "threads": 2, "bytes_per_s": 4e6,
    ...          "peer": "p", "ratio_to_peer": 2.0}, {"dataset": "d", "implementation": "p", "threads": 1,
    ...          "bytes_per_s": 2e6, "peer": None, "ratio_to_peer": None}]
    >>> available() is not None or throughput_plot("b", rows, Path(tempfile.mkdtemp()) / "t.png").stat().st_size > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(_by_dataset(records).items())[:MAX_PANELS]
    if not groups:
        return None
    heights = [0.9 + 0.32 * min(len(rows), MAX_BARS) for _, rows in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, max(3.0, sum(heights) + 0.6)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (dataset, rows) in zip(axes[:, 0], groups):
        rows = rows[:MAX_BARS]
        values = [r["bytes_per_s"] / 1e6 for r in rows]
        ax.barh(range(len(rows)), values, color=[_colour(r["implementation"]) for r in rows])
        ax.set_yticks(range(len(rows)), [_label(r) for r in rows], fontsize=8)
        ax.invert_yaxis()  # the table's order, top to bottom
        if max(values) / min(values) > 50:  # GPU rows next to one-thread peers
            ax.set_xscale("log")
        ax.set_xlim(right=max(values) * (8 if ax.get_xscale() == "log" else 1.45))
        for y, (value, r) in enumerate(zip(values, rows)):
            text = f"{value:,.3g}"
            if r.get("ratio_to_peer") is not None:
                text += f"  {r['ratio_to_peer']:.2f}x vs {r['peer']}"
            ax.text(value, y, " " + text, va="center", fontsize=7)
        ax.set_title(dataset[:110], fontsize=9, loc="left")
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel(unit_of(benchmark) + "; blue gpu_text[cpu], green gpu_text[cuda], grey peers", fontsize=8)
    fig.suptitle(f"{benchmark}: throughput per implementation (higher is faster)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def scaling_plot(points: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """Throughput against input size (log axis) per operation, in-process and through the CLI in a
    fresh process, and the CLI's share of the in-process throughput; None without points.

    >>> import tempfile; from pathlib import Path
    >>> pts = [{"op": "tokenize", "mode": m, "bytes": b, "mb_per_s": v}
    ...        for m, v in (("in-process", 10.0), ("cli", 5.0)) for b in (1e6, 4e6)]
    >>> available() is not None or scaling_plot(pts, Path(tempfile.mkdtemp()) / "s.png").stat().st_size > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [p for p in points if p.get("mb_per_s")]
    if not points:
        return None
    fig, (speed, share) = plt.subplots(1, 2, figsize=(12, 4.6))
    ops = list(dict.fromkeys(p["op"] for p in points))
    for i, op in enumerate(ops):
        colour = f"C{i}"
        by_mode: dict[str, dict[float, float]] = {}
        for p in points:
            if p["op"] == op:
                by_mode.setdefault(p["mode"], {})[p["bytes"] / 1e6] = p["mb_per_s"]
        for mode, line in by_mode.items():
            sizes = sorted(line)
            speed.plot(sizes, [line[s] for s in sizes], marker="o", color=colour,
                       linestyle="-" if mode == "in-process" else "--", label=f"{op}, {mode}")
        inside, cli = by_mode.get("in-process", {}), by_mode.get("cli", {})
        common = sorted(set(inside) & set(cli))
        if common:
            share.plot(common, [cli[s] / inside[s] for s in common], marker="o", color=colour, label=op)
    for ax in (speed, share):
        ax.set_xscale("log")
        ax.set_xlabel("input size, MB (log)")
        ax.grid(alpha=0.3, which="both")
    speed.set_ylabel("MB/s")
    speed.set_title("throughput (solid: in this process, dashed: CLI in a fresh process)", fontsize=9)
    share.axhline(CLI_TARGET, color="grey", linestyle=":", label=f"target {CLI_TARGET:.0%} at 1 GB (issue 15)")
    share.set_ylabel("CLI / in-process throughput")
    share.set_ylim(bottom=0)
    share.set_title("where start-up stops mattering", fontsize=9)
    speed.legend(fontsize=8)
    share.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _curve_groups(curves: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in curves:
        if any(y is not None for _, y in c["points"]):
            groups.setdefault((c["benchmark"], c["y_label"]), []).append(c)
    return groups


def curves_plot(curves: Sequence[dict[str, Any]], path: Path) -> Path | None:
    """A panel per (benchmark, quantity) with a line per curve (CRF objective per iteration, LDA
    log-likelihood per evaluation, word2vec loss per epoch); None when there is no curve.

    >>> import tempfile; from pathlib import Path
    >>> c = [{"benchmark": "crf", "name": "cpu", "x_label": "iteration", "y_label": "objective",
    ...       "points": [[1, 9.0], [2, 4.0], [3, None]]}]
    >>> available() is not None or curves_plot(c, Path(tempfile.mkdtemp()) / "c.png").stat().st_size > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(_curve_groups(curves).items())[:9]
    if not groups:
        return None
    columns = min(3, len(groups))
    lines = math.ceil(len(groups) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(5 * columns, 3.8 * lines), squeeze=False)
    for ax in axes.ravel()[len(groups):]:
        ax.set_visible(False)
    for ax, ((benchmark, y_label), members) in zip(axes.ravel(), groups):
        finite = []
        for c in members[:12]:
            xy = [(x, y) for x, y in c["points"] if x is not None and y is not None]
            finite += [y for _, y in xy]
            ax.plot([x for x, _ in xy], [y for _, y in xy], marker="." if len(xy) < 40 else None,
                    label=c["name"][:60])
        if finite and min(finite) > 0 and max(finite) / min(finite) > 100:
            ax.set_yscale("log")  # an objective falling by orders of magnitude
        ax.set_title(f"{benchmark}: {y_label}", fontsize=9)
        ax.set_xlabel(members[0]["x_label"], fontsize=8)
        ax.set_ylabel(y_label, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("training curves", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
