"""Markdown tables, the JSON record and the plot."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .correctness import CorrectnessRow
from .game import SWEEP_FLOOR, GameResult
from .memory import MemoryResult
from .opcount import PHASE_ORDER
from .timing import BULLET, FLOOR, PLUGIN, SYSTEMS, TRAVERSER, SizeResult

__all__ = [
    "game_table",
    "game_detail_table",
    "ops_table",
    "timing_table",
    "detail_table",
    "correctness_table",
    "memory_line",
    "write_json",
    "write_plot",
]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _ratio(num: float | None, den: float | None) -> str:
    if num is None or den is None or den == 0:
        return "-"
    return f"{num / den:,.1f}x" if num / den >= 10 else f"{num / den:.2f}x"


def _cell(result: SizeResult, name: str) -> str:
    text = _ms(result.ms.get(name))
    note = result.notes.get(name)
    if note:
        text = f"{text} ({note})" if result.ms.get(name) is not None else note
    return text


def timing_table(results: Sequence[SizeResult]) -> str:
    """Time per frame in milliseconds (medians), one row per size."""
    lines = [
        "| n | plugin ms | traverser ms | bullet ms | floor ms | traverser/plugin "
        "| plugin/floor | plugin us per collider |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        plugin = r.ms.get(PLUGIN)
        per = "-" if plugin is None else f"{1e3 * plugin / r.n:.2f}"
        lines.append(
            f"| {r.n:,} | {_cell(r, PLUGIN)} | {_cell(r, TRAVERSER)} | {_cell(r, BULLET)} "
            f"| {_cell(r, FLOOR)} | {_ratio(r.ms.get(TRAVERSER), plugin)} "
            f"| {_ratio(plugin, r.ms.get(FLOOR))} | {per} |"
        )
    return "\n".join(lines)


def _count(value: float) -> str:
    return f"{value:,.0f}"


def game_table(results: Sequence[GameResult]) -> str:
    """The game scene: time per frame (medians), the ratios and the plugin's numpy
    operations per pass (median, and the fewest and most of a pass)."""
    lines = [
        "| colliders | plugin ms | traverser ms | traverser/plugin | sweep floor ms "
        "| traverser/sweep floor | floor ms | plugin/floor "
        "| numpy ops per pass (fewest to most) | plugin us per op |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        plugin = r.ms.get(PLUGIN)
        ops, per = "-", "-"
        if r.ops:
            middle = float(np.median(r.ops))
            ops = f"{_count(middle)} ({_count(min(r.ops))} to {_count(max(r.ops))})"
            per = "-" if plugin is None else f"{1e3 * plugin / middle:.2f}"
        lines.append(
            f"| {r.n:,} | {_cell(r, PLUGIN)} | {_cell(r, TRAVERSER)} "
            f"| {_ratio(r.ms.get(TRAVERSER), plugin)} | {_cell(r, SWEEP_FLOOR)} "
            f"| {_ratio(r.ms.get(TRAVERSER), r.ms.get(SWEEP_FLOOR))} | {_cell(r, FLOOR)} "
            f"| {_ratio(plugin, r.ms.get(FLOOR))} | {ops} | {per} |"
        )
    return "\n".join(lines)


def game_detail_table(results: Sequence[GameResult]) -> str:
    """What each system's copy of the game held over its timed frames."""
    lines = [
        "| colliders | arena side | system | frames timed | frames with contacts "
        "| contacts a frame | rounds a pass (most) | ended past a wall | ended overlapping "
        "| pairs missed |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for name in (PLUGIN, TRAVERSER):
            stat = {k[len(name) + 1 :]: v for k, v in r.stats.items() if k.startswith(name + " ")}
            frames = stat.get("frames")
            if not frames:
                continue
            rounds = "-"
            if "rounds" in stat:
                rounds = f"{stat['rounds'] / frames:.2f} ({stat.get('rounds max', 0):.0f})"
            missed = _count(stat["missed"]) if "missed" in stat else "-"
            lines.append(
                f"| {r.n:,} | {r.side:.1f} | {name} | {frames:.0f} "
                f"| {_count(stat.get('frames with contacts', 0))} "
                f"| {stat.get('contacts', 0) / frames:.1f} | {rounds} "
                f"| {_count(stat.get('outside', 0))} | {_count(stat.get('overlapping', 0))} "
                f"| {missed} |"
            )
    return "\n".join(lines)


def ops_table(results: Sequence[GameResult]) -> str:
    """The plugin's numpy operations per pass (mean over the counted passes), by phase."""
    lines = [
        "| colliders | " + " | ".join(PHASE_ORDER) + " | all |",
        "|---:|" + "---:|" * (len(PHASE_ORDER) + 1),
    ]
    for r in results:
        phase = r.ops_by.get("phase")
        if not phase:
            continue
        cells = [_count(phase.get(name, 0.0)) for name in PHASE_ORDER]
        lines.append(f"| {r.n:,} | " + " | ".join(cells) + f" | {_count(sum(phase.values()))} |")
    return "\n".join(lines)


def detail_table(results: Sequence[SizeResult]) -> str:
    """What each frame held: the plugin's work counters and the others' output sizes."""
    keys = [
        ("box side", None),
        ("plugin candidate pairs", f"{PLUGIN} candidates"),
        ("plugin rounds", f"{PLUGIN} rounds"),
        ("plugin frames at the round cap", f"{PLUGIN} capped"),
        ("plugin contacts", f"{PLUGIN} contacts"),
        ("traverser entries", f"{TRAVERSER} entries"),
        ("bullet manifolds", f"{BULLET} manifolds"),
    ]
    lines = [
        "| n | " + " | ".join(label for label, _ in keys) + " |",
        "|---:|" + "---:|" * len(keys),
    ]
    for r in results:
        cells = [f"{r.side:.1f}"]
        for _label, key in keys[1:]:
            value = r.stats.get(key or "")
            if value is None:
                cells.append("-")
            elif key == f"{PLUGIN} capped":
                cells.append(f"{100 * value:.0f}%")
            else:
                cells.append(f"{value:,.0f}")
        lines.append(f"| {r.n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def correctness_table(rows: Sequence[CorrectnessRow]) -> str:
    lines = [
        "| system | pairs | true contacts | reported (true) | share of true contacts "
        "| false alarms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.system} | {row.pairs:,} | {row.true_contacts:,} | {row.caught:,} "
            f"| {100 * row.share:.1f}% | {row.false_alarms:,} |"
        )
    return "\n".join(lines)


def memory_line(mem: MemoryResult) -> str:
    rss = mem.rss_growth_mib
    rss_text = "n/a" if rss is None else f"{rss:+.2f} MiB"
    samples = ", ".join(f"{kib:,.0f}" for kib in mem.traced_kib)
    return (
        f"Memory: plugin pass at n={mem.n:,}, {mem.frames:,} frames after {mem.warmup} "
        f"warm-up, under tracemalloc: traced Python heap {mem.growth_kib:+,.1f} KiB "
        f"(from {mem.traced_kib[0]:,.1f} to {mem.traced_kib[-1]:,.1f} KiB; peak "
        f"{mem.peak_kib:,.0f} KiB), slope over the second half "
        f"{mem.slope_b_per_frame:+.2f} B/frame; RSS {rss_text}.\n"
        f"Traced KiB at frames {mem.frames_at}: {samples}; contacts in those frames: "
        f"{', '.join(str(c) for c in mem.contacts)}"
    )


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_json(path: Path, record: dict[str, Any]) -> None:
    path.write_text(json.dumps(_plain(record), indent=2) + "\n")


def write_plot(path: Path, results: Sequence[SizeResult], title: str) -> str | None:
    """Log-log time per frame against n for every system; returns a note instead of
    writing when matplotlib (the ``bench`` extra) is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]'): plot skipped"
    labels = {
        PLUGIN: "panda3d-ccd step()",
        TRAVERSER: "CollisionTraverser (respect prev)",
        BULLET: "Bullet doPhysics (full dynamics, reference)",
        FLOOR: "floor: read every position",
    }
    fig, ax = plt.subplots(figsize=(7, 5))
    for index, name in enumerate(SYSTEMS):
        points = [(r.n, r.ms[name]) for r in results if r.ms.get(name) is not None]
        if not points:
            continue
        xs, ys = zip(*points)
        colour = f"C{index}"
        ax.plot(xs, ys, marker="o", color=colour, label=labels[name])
        single = [(r.n, r.ms[name]) for r in results if name in r.notes and r.ms.get(name)]
        if single:  # one frame over the limit: drawn hollow, it is not a median
            sx, sy = zip(*single)
            ax.plot(sx, sy, "o", mfc="white", mec=colour, ms=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("spheres (n)")
    ax.set_ylabel("time per frame (ms, median)")
    ax.set_title(title)
    if any(r.notes for r in results):
        ax.text(0.01, 0.01, "hollow: one frame only (over the time limit)",
                transform=ax.transAxes, fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
