"""`shop-r1 profiles list | show NAME | check`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

DIR_HELP = "Directory of profile YAML files (default: the shipped profiles)."


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    group = typer.Typer(
        help="Hardware profiles: tested stacks per GPU family.", no_args_is_help=True
    )
    group.command("list")(list_cmd)
    group.command("show")(show_cmd)
    group.command("check")(check_cmd)
    app.add_typer(group, name="profiles")


def list_cmd(
    directory: Path | None = typer.Option(None, "--dir", help=DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the profiles with the GPUs they match and their stack."""
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.profiles.model import load_profiles

    profiles = load_profiles(directory)
    out = Output(as_json)
    if as_json:
        items = [{"name": p.name, **_summary(p)} for p in profiles.values()]
        out.emit("shop-r1.profiles/1", {"profiles": items})
        return
    rows = [("profile", "GPUs (sm)", "torch", "vLLM", "flash-attn", "dtype")]
    for p in profiles.values():
        s = _summary(p)
        rows.append(
            (p.name, s["gpus"] or "-", s["torch"], s["vllm"] or "-", s["flash_attn"], p.dtype)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.line("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def show_cmd(
    name: str = typer.Argument(
        ..., help="Profile name, GPU name or compute capability: hopper, 'RTX PRO 6000', sm_120."
    ),
    directory: Path | None = typer.Option(None, "--dir", help=DIR_HELP),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Show one profile in full, with the source of each fact."""
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.profiles.lookup import resolve_profile
    from shop_r1_doctor.profiles.match import flash_attn_install_command
    from shop_r1_doctor.profiles.model import load_profiles

    found = resolve_profile(name, load_profiles(directory))
    p = found.profile
    out = Output(as_json)
    if found.how and not as_json:
        out.line(f"({found.how}: profile {p.name})")
    if as_json:
        out.emit("shop-r1.profile/1", profile_to_json(p))
        return
    cc = ", ".join(f"{a}.{b}" for a, b in p.match.compute_capabilities) or "none (no GPU)"
    lines = [
        f"{p.name}: {p.summary}",
        f"  file            {p.path}",
        f"  GPUs            compute capability {cc}",
        f"  name patterns   {', '.join(p.match.name_patterns) or '-'}",
        *([f"  family of       {', '.join(p.members)} (one image for all)"] if p.members else []),
        f"  precision       {p.dtype}",
        f"  base image      {p.base_image}",
        f"  CUDA            {p.cuda.version if p.cuda else '-'}"
        + (f" (driver >= {p.cuda.min_driver_text})" if p.cuda else ""),
        f"  python          {p.python}",
        f"  torch           {p.torch.local} from {p.torch.index_url}",
        f"  vLLM            {p.vllm or 'none (GRPO generates with transformers)'}",
        f"  flash-attn      {p.flash_attn.mode}"
        + (f": {flash_attn_install_command(p)}" if p.flash_attn.mode != "none" else ""),
        f"  attention       {p.attention} (fallback {p.attention_fallback})",
    ]
    lines += [f"  {dist:<15} {spec}" for dist, spec in sorted(p.packages.items())]
    for extra in p.extras.values():
        pkgs = ", ".join(f"{d}=={v}" for d, v in extra.packages.items())
        pins = ", ".join(f"{d}{s}" for d, s in extra.pins.items()) or "none"
        lines.append(f"  --with {extra.name:<8} {pkgs}; pins: {pins}")
    env = {**p.env, **{f"{k} (2+ GeForce)": v for k, v in p.env_consumer_multi_gpu.items()}}
    lines += [f"  env             {k}={v}" for k, v in env.items()]
    lines += [
        f"  {k:<15} {v}" for k, v in (("WSL2", p.notes["wsl2"]), ("Windows", p.notes["windows"]))
    ]
    lines.append("  sources:")
    lines += [f"    {k}: {v}" for k, v in p.sources.items()]
    out.line("\n".join(lines))


def check_cmd(
    directory: Path | None = typer.Option(None, "--dir", help=DIR_HELP),
) -> None:
    """Validate every profile against the compatibility knowledge (exit 1 on contradictions)."""
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.knowledge import load_compat
    from shop_r1_doctor.profiles.check import RULES, check_profiles
    from shop_r1_doctor.profiles.model import load_profiles

    profiles = load_profiles(directory)
    problems = check_profiles(profiles, load_compat())
    out = Output()
    for problem in problems:
        out.line(str(problem))
    bad = len({p.profile for p in problems})
    verdict = f"{len(problems)} contradiction(s) in {bad} profile(s)" if problems else "ok"
    out.line(f"checked {len(profiles)} profiles x {len(RULES)} rule groups: {verdict}")
    if problems:
        raise typer.Exit(1)


def _summary(p: Any) -> dict[str, Any]:
    fa = p.flash_attn
    return {
        "name": p.name,
        "gpus": ",".join(f"{a}.{b}" for a, b in p.match.compute_capabilities),
        "torch": p.torch.local,
        "vllm": str(p.vllm) if p.vllm else None,
        "flash_attn": f"{fa.version} ({fa.mode})" if fa.mode != "none" else "none",
        "summary": p.summary,
    }


def profile_to_json(p: Any) -> dict[str, Any]:
    fa = p.flash_attn
    return {
        "name": p.name,
        "summary": p.summary,
        "members": list(p.members),
        "match": {
            "compute_capabilities": [f"{a}.{b}" for a, b in p.match.compute_capabilities],
            "name_patterns": list(p.match.name_patterns),
            "bf16": p.match.bf16,
        },
        "dtype": p.dtype,
        "cuda": {"version": str(p.cuda.version), "min_driver": p.cuda.min_driver_text}
        if p.cuda
        else None,
        "base_image": p.base_image,
        "python": p.python,
        "torch": {
            "version": str(p.torch.version),
            "variant": p.torch.variant,
            "index_url": p.torch.index_url,
        },
        "vllm": str(p.vllm) if p.vllm else None,
        "flash_attn": {
            "mode": fa.mode,
            "version": str(fa.version) if fa.version else None,
            "max_jobs": fa.max_jobs,
            "nvcc_threads": fa.nvcc_threads,
            "cuda_archs": fa.cuda_archs,
        },
        "attention": p.attention,
        "attention_fallback": p.attention_fallback,
        "packages": {k: str(v) for k, v in p.packages.items()},
        "extras": {
            k: {
                "packages": e.packages,
                "pins": e.pins,
                "apex": e.apex,
                "gradient_accumulation_fusion": e.gradient_accumulation_fusion,
            }
            for k, e in p.extras.items()
        },
        "env": p.env,
        "env_consumer_multi_gpu": p.env_consumer_multi_gpu,
        "notes": p.notes,
        "sources": p.sources,
    }
