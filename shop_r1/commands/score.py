"""`shop-r1 score`: score any model's raw outputs against gold actions (paper Tables 2-3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Add `score` to the root app."""
    app.command("score")(score)


def score(
    gold: Path = typer.Option(
        ..., "--gold", help="Gold JSONL/parquet: rows with id + action, RL rows, or session rows."
    ),
    pred: Path = typer.Option(
        ..., "--pred", help='Predictions JSONL: {"id": ..., "completion": "<raw output>"} per line.'
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the shop-r1.score/1 JSON report."),
    rewards: bool = typer.Option(
        False, "--rewards", help="Add each row's reward components (as in training)."
    ),
    lenient: bool = typer.Option(
        False, "--lenient", help="Lenient parser (first JSON object in the text)."
    ),
    markdown: bool = typer.Option(
        False, "--markdown", help="Print markdown tables instead of the terminal ones."
    ),
    require_all: bool = typer.Option(
        False, "--require-all", help="Fail when a gold id has no prediction."
    ),
    threshold: float = typer.Option(
        0.75, help="ROUGE-L threshold for text matches (metric and value reward)."
    ),
) -> None:
    """Exact match, action-type accuracy and macro-F1, per-type breakdown, confusion matrix."""
    from shop_r1.rewards import RewardConfig
    from shop_r1.score import score_files
    from shop_r1_doctor.errors import ToolError

    try:
        cfg = RewardConfig(threshold=threshold, strict=not lenient)
    except ValueError as exc:
        raise ToolError(f"--threshold: {exc}") from None
    report = score_files(
        gold, pred, with_rewards=rewards, strict=not lenient, cfg=cfg, require_all=require_all
    )
    from shop_r1_doctor.cli.output import Output

    out = Output(as_json)
    if as_json:
        out.emit(report["schema"], report)
    elif markdown:
        out.line(render_markdown(report))
    else:
        render_terminal(report, out)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


TYPES = ("click", "type_and_submit", "terminate")


def render_markdown(r: dict[str, Any]) -> str:
    lines = [
        "| n | exact action acc | action type acc | action type F1 | parse failures |",
        "|---|---|---|---|---|",
        f"| {r['n']} | {_pct(r['exact_match'])} | {_pct(r['type_accuracy'])} | "
        f"{_pct(r['type_macro_f1'])} | {_pct(r['parse_failure_rate'])} |",
        "",
        "| action type | support | exact | precision | recall | F1 |",
        "|---|---|---|---|---|---|",
    ]
    for t in TYPES:
        p = r["per_type"][t]
        lines.append(
            f"| {t} | {p['support']} | {_pct(p['exact_match'])} | {_pct(p['precision'])} | "
            f"{_pct(p['recall'])} | {_pct(p['f1'])} |"
        )
    return "\n".join(lines)


def render_terminal(r: dict[str, Any], out: Any) -> None:
    from rich.table import Table

    console = out.console()
    head = Table(title=f"Shop-R1 score ({r['n']} predictions, {r['parser']} parser)")
    for col in ("exact action acc", "action type acc", "action type F1", "parse failures"):
        head.add_column(col, justify="right")
    head.add_row(
        _pct(r["exact_match"]),
        _pct(r["type_accuracy"]),
        _pct(r["type_macro_f1"]),
        _pct(r["parse_failure_rate"]),
    )
    console.print(head)
    per = Table(title="Per action type")
    for col in ("type", "support", "exact", "precision", "recall", "F1"):
        per.add_column(col, justify="left" if col == "type" else "right")
    for t in TYPES:
        p = r["per_type"][t]
        per.add_row(
            t,
            str(p["support"]),
            _pct(p["exact_match"]),
            _pct(p["precision"]),
            _pct(p["recall"]),
            _pct(p["f1"]),
        )
    console.print(per)
    conf = Table(title="Confusion (rows: gold, columns: predicted)")
    conf.add_column("gold \\ pred")
    cols = (*TYPES, "unparsed")
    for c in cols:
        conf.add_column(c, justify="right")
    for t in TYPES:
        conf.add_row(t, *(str(r["confusion"][t][c]) for c in cols))
    console.print(conf)
    if r.get("missing"):
        console.print(
            f"[yellow]note:[/] {r['missing']} gold row(s) had no prediction and were not "
            "scored (--require-all makes this an error)"
        )
    if "rows" in r:
        mean = sum(row["total"] for row in r["rows"]) / max(len(r["rows"]), 1)
        console.print(
            f"mean reward (without self-certainty): {mean:.3f}; per-row components in --json"
        )
