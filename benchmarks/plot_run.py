"""PNG plots of a GRPO run: reward components and exact match over steps (from the
trainer's TensorBoard event files), and per-type accuracy of each evaluated stage.

    python benchmarks/plot_run.py --events runs/learning/grpo --eval runs/learning/learning.json \\
        --out-dir docs/img --name learning

`--events` is an event file or a folder searched for `events.out.tfevents.*` (the trainer
writes them under `<output_dir>/runs/<date>_<host>/`; with several, the newest is used).
The curves are TRL's GRPO logs: `train/reward`, `train/rewards/<component>/mean` for the
reward functions `shop_r1.rewards` hands TRL (format, type, attribute, value), and the
metrics they log (`train/exact_match`, `train/parse_failure_rate`, `train/pred_type/*`,
TRL's `train/frac_reward_zero_std`). Every point is the mean over one logging window of
rollouts: the policy's samples at the training temperature, not the greedy evaluation.

`--eval` (repeatable, `LABEL=FILE` to name it) is a `metrics.json` of `shop-r1 eval` (the
`shop-r1.score/1` object) or a `learning.json` of `benchmarks/learning.py` (each of its
stages). Writes `<name>_curves.png` and `<name>_per_type.png`.
Needs matplotlib and tensorboard (the `plots` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COMPONENTS = ("format", "type", "attribute", "value")
TYPES = ("click", "type_and_submit", "terminate")
SCORE_SCHEMA = "shop-r1.score/1"


class InputError(Exception):
    """Bad input: one line for the user, exit 2."""


def event_file(path: Path) -> Path:
    if path.is_file():
        return path
    if not path.is_dir():
        raise InputError(f"--events {path}: no such file or folder")
    found = sorted(path.rglob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise InputError(
            f"--events {path}: no events.out.tfevents.* below it (was the run's report_to tensorboard?)"
        )
    return found[-1]


def read_scalars(path: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] in step order, every point the file holds."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(path), size_guidance={"scalars": 0})  # 0: keep every point
    try:
        acc.Reload()
    except Exception as exc:  # a truncated or foreign file: tensorboard raises its own types
        raise InputError(f"--events {path}: not a TensorBoard event file ({exc})") from None
    out = {}
    for tag in acc.Tags().get("scalars", []):
        points = sorted((e.step, float(e.value)) for e in acc.Scalars(tag))
        out[tag] = points
    return out


def grpo_curves(scalars: dict[str, list[tuple[int, float]]], source: Path) -> dict[str, Any]:
    """The series the curves plot: reward, its components, exact match, parse failures."""

    def series(tag: str) -> list[tuple[int, float]]:
        return scalars.get(f"train/{tag}", [])

    if not series("reward"):
        found = ", ".join(sorted(scalars)[:8]) or "none"
        raise InputError(
            f"--events {source}: no train/reward scalars (a GRPO run's log?); tags: {found}"
        )
    return {
        "reward": series("reward"),
        "components": {c: series(f"rewards/{c}/mean") for c in COMPONENTS},
        "exact_match": series("exact_match"),
        "parse_failure_rate": series("parse_failure_rate"),
        "frac_reward_zero_std": series("frac_reward_zero_std"),
        "pred_type": {t: series(f"pred_type/{t}") for t in TYPES},
        "gold_type": {t: series(f"gold_type/{t}") for t in TYPES},
    }


def read_stages(spec: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, score/1 object) pairs from one --eval argument."""
    label, sep, file = spec.partition("=")
    path = Path(file if sep else spec)
    if not path.is_file():
        raise InputError(f"--eval {path}: no such file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--eval {path}: not JSON ({exc})") from None
    if isinstance(data, dict) and data.get("schema") == SCORE_SCHEMA:
        return [(label if sep else path.parent.name, data)]
    stages = data.get("stages") if isinstance(data, dict) else None
    if isinstance(stages, dict):
        out = [
            (f"{label}: {name}" if sep else name, m)
            for name, m in stages.items()
            if isinstance(m, dict) and m.get("schema") == SCORE_SCHEMA
        ]
        if out:
            return out
    raise InputError(
        f"--eval {path}: neither a {SCORE_SCHEMA} metrics.json nor a learning.json with stages"
    )


def plot_curves(curves: dict[str, Any], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex=True)
    ax = axes[0][0]
    _line(ax, curves["reward"], "total (what GRPO maximises)")
    _line(ax, curves["components"]["value"], "value (DARS x ROUGE-L, or binary)", "--")
    ax.set_title("reward per completion")
    ax = axes[0][1]
    for c in ("format", "type", "attribute"):
        _line(ax, curves["components"][c], c)
    ax.set_title("small reward components")
    ax = axes[1][0]
    _line(ax, curves["exact_match"], "exact match (rollouts)")
    _line(ax, curves["parse_failure_rate"], "parse failures")
    _line(ax, curves["frac_reward_zero_std"], "groups with no reward spread", ":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("rollouts: exact match, failures, tied groups")
    ax = axes[1][1]
    for t in TYPES:
        line = _line(ax, curves["pred_type"][t], f"predicted {t}")
        if line is not None:
            _line(ax, curves["gold_type"][t], f"gold {t}", ":", color=line.get_color())
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("action-type mix of the rollouts (collapse watch)")
    for row in axes:
        for a in row:
            if a.lines:
                a.legend(fontsize=7)
            a.grid(alpha=0.3)
    for a in axes[1]:
        a.set_xlabel("optimizer step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _line(ax: Any, points: list[tuple[int, float]], label: str, style: str = "-", **kw: Any) -> Any:
    if not points:
        return None
    steps, values = zip(*points, strict=True)
    return ax.plot(steps, values, style, label=label, marker=".", markersize=3, **kw)[0]


def plot_per_type(stages: list[tuple[str, dict[str, Any]]], title: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    width = 0.8 / len(stages)
    for ax, key, name in (
        (axes[0], "exact_match", "exact match by gold type"),
        (axes[1], "recall", "type accuracy (recall) by gold type"),
    ):
        for i, (label, m) in enumerate(stages):
            values = [m["per_type"][t][key] for t in TYPES]
            xs = [k + (i - (len(stages) - 1) / 2) * width for k in range(len(TYPES))]
            overall = m["exact_match"] if key == "exact_match" else m["type_accuracy"]
            bars = ax.bar(xs, values, width, label=f"{label} (all: {overall:.1%})")
            ax.bar_label(bars, labels=[f"{v:.0%}" for v in values], fontsize=7)
        supports = [stages[0][1]["per_type"][t]["support"] for t in TYPES]
        ax.set_xticks(
            range(len(TYPES)), [f"{t}\n(n={s})" for t, s in zip(TYPES, supports, strict=True)]
        )
        ax.set_ylim(0, 1.1)
        ax.set_title(name)
        ax.legend(fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", help="a GRPO run's event file, or a folder holding one")
    ap.add_argument(
        "--eval", action="append", default=[], help="[LABEL=]metrics.json|learning.json"
    )
    ap.add_argument("--out-dir", default="docs/img")
    ap.add_argument("--name", default="run", help="file name prefix of the PNGs")
    ap.add_argument("--title", help="figure title (default: the name)")
    args = ap.parse_args(argv)
    if not args.events and not args.eval:
        ap.error("give --events, --eval or both")
    out_dir = Path(args.out_dir)
    title = args.title or args.name
    try:
        stages = [s for spec in args.eval for s in read_stages(spec)]
        curves = None
        if args.events:
            source = event_file(Path(args.events))
            curves = grpo_curves(read_scalars(source), source)
        out_dir.mkdir(parents=True, exist_ok=True)
    except InputError as exc:
        print(f"plot_run: {exc}", file=sys.stderr)
        return 2
    if curves is not None:
        target = out_dir / f"{args.name}_curves.png"
        plot_curves(curves, title, target)
        print(f"wrote {target} ({len(curves['reward'])} logged steps)")
    if stages:
        target = out_dir / f"{args.name}_per_type.png"
        plot_per_type(stages, title, target)
        print(f"wrote {target} ({', '.join(label for label, _ in stages)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
