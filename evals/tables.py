"""Tables and percentiles the evaluations print."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def fmt(value: float | None, pattern: str = "{:.1f}") -> str:
    return "-" if value is None else pattern.format(value)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table, columns padded to line up in a terminal too."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"
        for cells in (header, ["-" * w for w in widths], *rows)
    ]
    return "\n".join(lines)
