"""`shop-r1 eval`: predictions from a local model or an OpenAI-compatible endpoint, scored."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("eval")(eval_command)


def eval_command(
    data: Path = typer.Option(..., "--data", help="Sessions file (JSONL or parquet)."),
    output_dir: Path = typer.Option(
        ..., "--output-dir", help="Writes predictions.jsonl, metrics.json, report.md here."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Local checkpoint directory, Hub id or .gguf file (batched generate()).",
    ),
    endpoint: str | None = typer.Option(
        None, "--endpoint", help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1."
    ),
    served_model: str | None = typer.Option(
        None, "--served-model", help="Model name the endpoint serves (vLLM --served-model-name)."
    ),
    api_key_env: str = typer.Option(
        "OPENAI_API_KEY", "--api-key-env", help="Env var holding the endpoint's API key."
    ),
    split: str = typer.Option("test", "--split", help="test | train | all (split by session)."),
    test_fraction: float | None = typer.Option(
        None,
        "--test-fraction",
        help="Share of sessions held out (default: training's, read from the model "
        "directory's shop_r1_run.yaml, else 0.1).",
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="Split seed (default: training's, else 0)."
    ),
    context: str | None = typer.Option(
        None, "--context", help="full (whole session) | latest (default: training's, else full)."
    ),
    max_prompt_tokens: int | None = typer.Option(
        None, "--max-prompt-tokens", help="Prompt token budget (default: training's, else none)."
    ),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens"),
    batch_size: int = typer.Option(16, "--batch-size", help="Local model: prompts per batch."),
    concurrency: int = typer.Option(8, "--concurrency", help="Endpoint: requests in flight."),
    retries: int = typer.Option(3, "--retries", help="Endpoint: extra attempts per request."),
    timeout: float = typer.Option(60.0, "--timeout", help="Endpoint: seconds per request."),
    limit: int | None = typer.Option(None, "--limit", help="Evaluate only the first N steps."),
    lenient: bool = typer.Option(
        False, "--lenient", help="Parse the first JSON object in the output (default: strict)."
    ),
    device: str = typer.Option("auto", "--device", help="Local model: auto | cpu | cuda[:N]."),
) -> None:
    """Generate next-action predictions for held-out steps and score them like the paper."""
    if model:
        from shop_r1.commands._common import require_train_extra

        require_train_extra(
            "eval --model", "or score a served model with --endpoint URL --served-model NAME"
        )
    from shop_r1.config import training_data_settings
    from shop_r1.eval import EvalOptions, run_eval
    from shop_r1_doctor.cli.output import Output, progress

    out = Output()

    given: dict[str, Any] = {
        "seed": seed,
        "test_fraction": test_fraction,
        "context": context,
        "max_prompt_tokens": max_prompt_tokens,
    }
    settings = {k: v for k, v in given.items() if v is not None}  # else EvalOptions' defaults
    from shop_r1_doctor.errors import ToolError

    if not data.is_file():
        what = "is a directory" if data.is_dir() else "no such file"
        raise ToolError(f"--data {data}: {what}; give a sessions JSONL or parquet file")
    if model:
        from shop_r1.models import resolve_model

        model = resolve_model(model, log=out.note)
    found = training_data_settings(model) if model and Path(model).is_dir() else None
    if found:
        taken = {k: v for k, v in found[1].items() if k not in settings}
        if taken:
            shown = ", ".join(f"{k}={v}" for k, v in taken.items())
            out.note(f"from {found[0]}: {shown}")
        settings.update(taken)

    opts = EvalOptions(
        data=data,
        output_dir=output_dir,
        model=model,
        endpoint=endpoint,
        served_model=served_model,
        api_key=os.environ.get(api_key_env) or None,
        split=split,
        max_new_tokens=max_new_tokens,
        batch_size=batch_size,
        concurrency=concurrency,
        retries=retries,
        timeout=timeout,
        limit=limit,
        strict=not lenient,
        device=device,
        **settings,
    )
    opts.check()
    with progress("generating", total=None, unit="prompts") as bar:
        result = run_eval(opts, on_done=bar, on_total=bar.set_total)
    m = result.metrics
    out.line(
        f"n={m['n']}  exact={m['exact_match']:.2%}  type_acc={m['type_accuracy']:.2%}  "
        f"macro_f1={m['type_macro_f1']:.2%}  parse_fail={m['parse_failure_rate']:.2%}"
    )
    for name, t in m["per_type"].items():
        out.line(
            f"  {name:<16} support={t['support']:<5} P={t['precision']:.2%} "
            f"R={t['recall']:.2%} F1={t['f1']:.2%} exact={t['exact_match']:.2%} "
            f"predicted_share={m['prediction_mix'].get(name, 0.0):.2%}"
        )
    failures = result.meta.get("request_failures", 0)
    if failures:
        out.line(f"warning: {failures} request(s) failed after retries (counted as wrong)")
    out.line(f"wrote {output_dir}/predictions.jsonl, metrics.json, report.md")
