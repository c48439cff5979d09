"""Evaluation: held-out steps -> completions (local model or endpoint) -> paper metrics.

Reads top to bottom: rows (prompt + gold) -> completions -> parse with the rewards' parser
-> `compute_metrics` (the same code `shop-r1 score` uses) -> predictions.jsonl,
metrics.json (`shop-r1.score/1` plus an `eval` block) and report.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1_doctor.errors import ToolError

SPLITS = ("test", "train", "all")
CONTEXTS = ("full", "latest")


@dataclass(frozen=True)
class EvalRow:
    id: str
    messages: list[dict]  # system + user chat messages, no answer
    gold: Any  # shop_r1.actions.Action


@dataclass
class EvalResult:
    rows: list[EvalRow]
    completions: list[str]
    errors: list[str | None]  # per row: why the request failed, None when it did not
    metrics: dict
    meta: dict = field(default_factory=dict)


def select_split(sessions: list, split: str, *, test_fraction: float = 0.1, seed: int = 0) -> list:
    """The same session-level split the trainer uses, so `test` never saw training."""
    from shop_r1.data.split import split_by_session

    if split not in SPLITS:
        raise ToolError(f"--split: {split!r} is not one of {', '.join(SPLITS)}")
    if split == "all":
        return sessions
    try:
        train, test = split_by_session(sessions, test_fraction, seed)
    except ValueError as exc:
        raise ToolError(f"--test-fraction: {exc}; use the training run's value") from None
    return test if split == "test" else train


def rows_from_sessions(
    sessions: list, *, context: str = "full", limit: int | None = None, **prompt_kw: Any
) -> list[EvalRow]:
    """One row per step: the prompt the policy sees in training and the gold action."""
    from shop_r1.actions import Action
    from shop_r1.data.prompts import rl_rows

    if context not in CONTEXTS:
        raise ToolError(f"--context: {context!r} is not one of {', '.join(CONTEXTS)}")
    rows = []
    for raw in rl_rows(sessions, context=context, **prompt_kw):
        gold = Action.from_json(json.loads(raw["gold_action"]))
        rows.append(EvalRow(id=str(raw["id"]), messages=list(raw["prompt"]), gold=gold))
        if limit is not None and len(rows) >= limit:
            break
    return rows


def load_rows(
    path: Path,
    *,
    split: str = "test",
    context: str = "full",
    limit: int | None = None,
    test_fraction: float = 0.1,
    seed: int = 0,
    max_prompt_tokens: int | None = None,
) -> list[EvalRow]:
    from shop_r1.data.io import load_sessions

    if not path.exists():
        raise ToolError(f"--data {path}: no such file; give a sessions JSONL or parquet file")
    sessions = select_split(load_sessions(path), split, test_fraction=test_fraction, seed=seed)
    rows = rows_from_sessions(sessions, context=context, limit=limit, max_tokens=max_prompt_tokens)
    if not rows:
        raise ToolError(
            f"--data {path}: the {split} split has no steps to evaluate; "
            "use --split all or a larger file"
        )
    return rows


def score(
    rows: Sequence[EvalRow],
    completions: Sequence[str],
    *,
    strict: bool = True,
    threshold: float = 0.75,
) -> dict:
    """`shop-r1.score/1` metrics plus the predicted-type mix (to spot collapse onto one type)."""
    from shop_r1.metrics import compute_metrics
    from shop_r1.parser import parse_cached

    # memoised: write_outputs asks again for each row's verdict
    parsed = [parse_cached(c, strict) for c in completions]
    metrics = compute_metrics([r.gold for r in rows], parsed, threshold=threshold)
    metrics["prediction_mix"] = type_mix([p.action.type for p in parsed if p.ok and p.action])
    metrics["gold_mix"] = type_mix([r.gold.type for r in rows])
    return metrics


def type_mix(types: Sequence[str]) -> dict[str, float]:
    """Share of each action type among `types` (unparsed outputs are simply not in it)."""
    from shop_r1.actions import ACTION_TYPES

    n = len(types)
    return {t: (sum(1 for x in types if x == t) / n if n else 0.0) for t in ACTION_TYPES}


def generate_with_model(
    model: Any,
    tokenizer: Any,
    rows: Sequence[EvalRow],
    *,
    max_new_tokens: int = 256,
    batch_size: int = 16,
    on_done: Callable[[int], None] | None = None,
) -> list[str]:
    from shop_r1.generate import generate_local

    return generate_local(
        model,
        tokenizer,
        [r.messages for r in rows],
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        on_done=on_done,
    )


def evaluate_model(
    model: Any,
    tokenizer: Any,
    rows: Sequence[EvalRow],
    *,
    max_new_tokens: int = 256,
    batch_size: int = 16,
    strict: bool = True,
    on_done: Callable[[int], None] | None = None,
) -> EvalResult:
    """In-process evaluation of a loaded model (used by the demo and the GPU benchmark)."""
    completions = generate_with_model(
        model,
        tokenizer,
        rows,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        on_done=on_done,
    )
    metrics = score(rows, completions, strict=strict)
    return EvalResult(list(rows), completions, [None] * len(rows), metrics)


def write_outputs(result: EvalResult, output_dir: Path, *, title: str = "shop-r1 eval") -> None:
    """predictions.jsonl, metrics.json, report.md; each appears whole or not at all."""
    from shop_r1_doctor.api import atomic_open, write_text

    if output_dir.exists() and not output_dir.is_dir():
        raise ToolError(f"--output-dir {output_dir}: is a file; give a directory")
    output_dir.mkdir(parents=True, exist_ok=True)
    from shop_r1.metrics import exact_match
    from shop_r1.parser import parse_cached

    # Each row's gold and verdict ride along (`shop-r1 score` reads only id + completion):
    # which steps a model misses, and paired comparisons of two runs on the same steps
    # (benchmarks/paired_eval.py), need no second copy of the data.
    strict = bool(result.meta.get("strict", True))
    threshold = float(result.metrics.get("threshold", 0.75))
    with atomic_open(output_dir / "predictions.jsonl") as f:
        for row, text, error in zip(result.rows, result.completions, result.errors, strict=True):
            parsed = parse_cached(text, strict)
            pred = parsed.action if parsed.ok else None
            record: dict[str, Any] = {
                "id": row.id,
                "completion": text,
                "gold": _action_dict(row.gold),
                "type_ok": pred is not None and pred.type == row.gold.type,
                "exact": pred is not None and exact_match(pred, row.gold, threshold),
            }
            if error is not None:
                record["error"] = error
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    payload = dict(result.metrics)
    payload["eval"] = result.meta
    write_text(output_dir / "metrics.json", json.dumps(payload, indent=2) + "\n")
    write_text(output_dir / "report.md", render_report(result.metrics, result.meta, title=title))


def _action_dict(action: Any) -> dict[str, Any]:
    return {"type": action.type, "name": action.name, "text": action.text}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%"


def render_report(metrics: dict, meta: dict, *, title: str = "shop-r1 eval") -> str:
    """Markdown mirroring the paper's Tables 2-3: headline, per-type, confusion, type mix."""
    lines = [f"# {title}", ""]
    for key in ("model", "endpoint", "served_model", "data", "split", "context"):
        if meta.get(key) is not None:
            lines.append(f"- {key}: `{meta[key]}`")
    if meta.get("request_failures"):
        lines.append(
            f"- **{meta['request_failures']} request(s) failed after retries**; "
            "they count as unparsed (wrong) predictions"
        )
    lines += [
        "",
        "| n | exact match | type accuracy | type macro-F1 | parse failures |",
        "|---|---|---|---|---|",
        f"| {metrics['n']} | {_pct(metrics['exact_match'])} | {_pct(metrics['type_accuracy'])} "
        f"| {_pct(metrics['type_macro_f1'])} | {_pct(metrics['parse_failure_rate'])} |",
        "",
        "## Per action type",
        "",
        "| type | support | precision | recall | F1 | exact match | gold share | predicted share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    gold_mix, pred_mix = metrics.get("gold_mix", {}), metrics.get("prediction_mix", {})
    for name, m in metrics["per_type"].items():
        lines.append(
            f"| {name} | {m['support']} | {_pct(m['precision'])} | {_pct(m['recall'])} "
            f"| {_pct(m['f1'])} | {_pct(m['exact_match'])} | {_pct(gold_mix.get(name, 0.0))} "
            f"| {_pct(pred_mix.get(name, 0.0))} |"
        )
    lines += ["", "## Confusion (rows: gold type, columns: predicted type)", ""]
    lines += _confusion_table(metrics.get("confusion", {}))
    return "\n".join(lines) + "\n"


def _confusion_table(confusion: dict) -> list[str]:
    if not confusion:
        return ["(none)"]
    columns: list[str] = []
    for row in confusion.values():
        for col in row:
            if col not in columns:
                columns.append(col)
    out = ["| gold \\ pred | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for gold, row in confusion.items():
        out.append(f"| {gold} | " + " | ".join(str(row.get(c, 0)) for c in columns) + " |")
    return out


@dataclass(frozen=True)
class EvalOptions:
    data: Path
    output_dir: Path
    model: str | None = None
    endpoint: str | None = None
    served_model: str | None = None
    api_key: str | None = None  # read from the env by the command; never written out
    split: str = "test"
    context: str = "full"
    max_prompt_tokens: int | None = None  # must match training's, like context
    max_new_tokens: int = 256
    batch_size: int = 16
    concurrency: int = 8
    retries: int = 3
    timeout: float = 60.0
    limit: int | None = None
    strict: bool = True
    test_fraction: float = 0.1
    seed: int = 0
    device: str = "auto"

    def check(self) -> None:
        if (self.model is None) == (self.endpoint is None):
            raise ToolError("give exactly one of --model PATH_OR_HUB_ID or --endpoint URL")
        if self.endpoint is not None and not self.served_model:
            raise ToolError("--endpoint needs --served-model NAME (vLLM's --served-model-name)")
        for name, value in (
            ("--max-new-tokens", self.max_new_tokens),
            ("--limit", self.limit),
            ("--max-prompt-tokens", self.max_prompt_tokens),
        ):
            if value is not None and value < 1:
                raise ToolError(f"{name}: {value} must be >= 1")
        if self.retries < 0 or self.timeout <= 0:
            raise ToolError("--retries must be >= 0 and --timeout > 0")
        for name, value, most in (
            ("--batch-size", self.batch_size, 4096),
            ("--concurrency", self.concurrency, 1024),
            ("--max-new-tokens", self.max_new_tokens, 1_000_000),
            ("--retries", self.retries, 100),
        ):
            if not (0 if name == "--retries" else 1) <= value <= most:
                raise ToolError(f"{name}: {value} is out of range; use 1 to {most}")
        if self.endpoint is not None:
            check_url(self.endpoint)
        if self.model is not None:
            from shop_r1.commands._common import check_local_ref

            check_local_ref(self.model, "--model")
            check_device(self.device)
        if self.output_dir.exists() and not self.output_dir.is_dir():
            raise ToolError(f"--output-dir {self.output_dir}: is a file; give a directory")


def check_url(url: str) -> None:
    """An endpoint must be an http(s) URL with a host, checked before any request."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    try:
        parsed.port  # noqa: B018 -- raises ValueError for a port that is not a number
    except ValueError:
        raise ToolError(f"--endpoint {url}: the port is not a number") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ToolError(f"--endpoint {url}: not an http(s) URL; give e.g. http://127.0.0.1:8000/v1")


def check_device(device: str) -> None:
    """--device: auto, cpu, cuda or cuda:N (that exists here), mps; before loading a model."""
    import re

    if device in ("auto", "cpu"):
        return
    if device != "mps" and not re.fullmatch(r"cuda(:\d+)?", device):
        raise ToolError(f"--device {device}: unknown; use auto, cpu, cuda or cuda:N")
    import torch

    if device == "mps":
        if not torch.backends.mps.is_available():
            raise ToolError("--device mps: MPS is not available here; use --device cpu")
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        have = f"{count} CUDA device(s)" if count else "no CUDA device"
        raise ToolError(f"--device {device}: this machine has {have}; use --device cpu or auto")


def run_eval(
    opts: EvalOptions,
    *,
    on_done: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> EvalResult:
    """Generate, score and write; returns the result for the command to print.
    `on_total` gets the number of prompts once known, `on_done` each finished batch."""
    from shop_r1_doctor.api import redact_text

    opts.check()
    rows = load_rows(
        opts.data,
        split=opts.split,
        context=opts.context,
        limit=opts.limit,
        test_fraction=opts.test_fraction,
        seed=opts.seed,
        max_prompt_tokens=opts.max_prompt_tokens,
    )
    if on_total:
        on_total(len(rows))
    meta: dict[str, Any] = {
        "data": redact_text(str(opts.data)),
        "split": opts.split,
        "context": opts.context,
        "max_prompt_tokens": opts.max_prompt_tokens,
        "strict": opts.strict,
        "max_new_tokens": opts.max_new_tokens,
    }
    errors: list[str | None] = [None] * len(rows)
    if opts.endpoint is not None:
        from shop_r1.endpoint import EndpointConfig, complete_all

        cfg = EndpointConfig(
            url=opts.endpoint,
            model=opts.served_model or "",
            api_key=opts.api_key,
            timeout=opts.timeout,
            retries=opts.retries,
            max_tokens=opts.max_new_tokens,
        )
        done = complete_all(
            cfg, [r.messages for r in rows], concurrency=opts.concurrency, on_done=on_done
        )
        completions = [c.text for c in done]
        errors = [c.error for c in done]
        meta.update(endpoint=redact_text(opts.endpoint), served_model=opts.served_model)
        meta["request_failures"] = sum(1 for e in errors if e is not None)
        meta["retried_requests"] = sum(1 for c in done if c.attempts > 1)
        if meta["request_failures"] == len(rows):  # a score of 0 would be a wrong number
            first = next(e for e in errors if e is not None)
            raise ToolError(
                f"--endpoint {redact_text(opts.endpoint)}: all {len(rows)} request(s) failed "
                f"(first: {first}); is the server up and serving --served-model "
                f"{opts.served_model}? nothing was written"
            )
    else:
        from shop_r1.generate import load_model

        model, tokenizer = load_model(opts.model or "", device=opts.device)
        completions = generate_with_model(
            model,
            tokenizer,
            rows,
            max_new_tokens=opts.max_new_tokens,
            batch_size=opts.batch_size,
            on_done=on_done,
        )
        meta["model"] = redact_text(opts.model or "")
    result = EvalResult(
        rows, completions, errors, score(rows, completions, strict=opts.strict), meta
    )
    write_outputs(result, opts.output_dir)
    return result
