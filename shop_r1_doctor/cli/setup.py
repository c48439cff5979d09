"""`shop-r1 setup`: a profile's stack into a NEW virtual environment, in one reviewed step.

`--dry-run` prints the plan (files and commands); otherwise the venv is created, the
steps run in order, and the doctor runs inside it with its own interpreter.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("setup")(setup)


def setup(
    profile: str | None = typer.Option(
        None,
        "--profile",
        help="Profile name, GPU name or compute capability ('RTX PRO 6000', sm_120); "
        "default: the profile matching this machine (or --snapshot).",
    ),
    venv: Path = typer.Option(
        Path(".venv"), "--venv", help="The NEW virtual environment to create (new or empty)."
    ),
    with_: list[str] = typer.Option([], "--with", help="Add a stack: verl, megatron (repeatable)."),
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="Plan for the machine of this snapshot (doctor --save) instead of this one.",
    ),
    python: str | None = typer.Option(
        None,
        "--python",
        help="Interpreter that makes the venv (default: python<profile's version>, else this one).",
    ),
    installer: str = typer.Option("auto", "--installer", help="auto (uv if on PATH), uv or pip."),
    torch_index: str | None = typer.Option(
        None, "--torch-index", help="A mirror of the chosen torch build's index (the build stays)."
    ),
    shop_r1: str | None = typer.Option(
        None,
        "--shop-r1",
        help="What installs shop-r1 into the venv: a path or requirement "
        "(default: this checkout, else shop-r1==VERSION).",
    ),
    dump: str | None = typer.Option(
        None,
        "--from",
        help="Plan for the machine of a pasted environment dump (collect_env, nvidia-smi, ...).",
        metavar="FILE",
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; install nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (schema shop-r1.setup/1)."),
) -> None:
    """Install a profile's stack into a new virtual environment, then run the doctor in it."""
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.setup.install import install_plan, render_text

    out = Output(as_json)

    if installer not in ("auto", "uv", "pip"):
        raise ToolError(f"--installer {installer}: choose auto, uv or pip")
    chosen = ("uv" if shutil.which("uv") else "pip") if installer == "auto" else installer
    if not dry_run:
        from shop_r1_doctor.setup.execute import check_new_venv

        check_new_venv(venv)  # before any probing: never a step toward an existing env
    prof, how, target = _profile_and_target(profile, snapshot, dump, out)
    from shop_r1_doctor.dockerfile import validate_extras

    extras = validate_extras(prof, with_)
    base_python, note = _base_python(python, prof.python, probe=not dry_run)
    venv_text = str(venv.expanduser().absolute()) if not dry_run else str(venv)
    plan = install_plan(
        prof,
        extras,
        target,
        venv=venv_text,
        base_python=base_python,
        installer=chosen,  # type: ignore[arg-type]
        torch_index=torch_index,
        shop_r1_source=shop_r1 or _shop_r1_source(),
        python_note=note,
    )
    doc: dict[str, Any] = {**plan.to_json(), "profile_how": how or None, "dry_run": dry_run}
    if dry_run:
        doc["result"] = None
        out.emit(doc["schema"], doc, lambda _: out.line(render_text(plan), nl=False))
        return
    from shop_r1_doctor.setup.execute import execute

    if not as_json:
        out.line(render_text(plan), nl=False, err=True)
    result = execute(plan, on_step=out.note)
    doc["result"] = result.to_json()
    if as_json:
        out.emit(doc["schema"], doc)
    else:
        s = result.doctor_summary or {}
        out.line(
            f"{plan.venv}: installed profile {prof.name} ({plan.torch.local}) in "
            f"{sum(st.seconds for st in result.steps):.0f} s; doctor in it (profile "
            f"{result.doctor_profile}): {s.get('errors', '?')} errors, "
            f"{s.get('warnings', '?')} warnings, exit {result.doctor_exit}"
        )
    raise typer.Exit(1 if result.doctor_exit else 0)


def _profile_and_target(
    profile: str | None, snapshot: Path | None, dump: str | None, out: Any
) -> tuple[Any, str, Any]:
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.profiles.lookup import resolve_profile
    from shop_r1_doctor.profiles.match import best_profile
    from shop_r1_doctor.profiles.model import load_profiles
    from shop_r1_doctor.setup.install import Target

    if snapshot is not None and dump is not None:
        raise ToolError("--snapshot and --from both name the machine: give one")
    if snapshot is not None:
        from shop_r1_doctor.snapshot import load_snapshot

        facts = Facts(load_snapshot(snapshot))
        source = f"snapshot {snapshot}"
    elif dump is not None:
        from shop_r1_doctor.ingest import read_dump, snapshot_from_dump

        facts = Facts(snapshot_from_dump(*read_dump(dump)))
        source = f"dump {dump}"
    else:
        from shop_r1_doctor.probes.collect import collect_snapshot

        facts = Facts(collect_snapshot(fast=True))
        source = "this machine"
    if profile is not None:
        found = resolve_profile(profile)
        prof, how = found.profile, found.how
    else:
        best = best_profile(facts, load_profiles())
        if best is None:
            raise ToolError(
                f"--profile: no profile matches the GPUs of {source}; "
                "give one (shop-r1 profiles list)"
            )
        prof, how = best[0], f"matched {source}: {best[1]}"
    target = Target.from_facts(facts, source)
    from shop_r1_doctor.cli.build_image import uncovered_gpus

    for line in uncovered_gpus(prof, (facts.gpus, source)):
        out.note(f"warning: {line}")
    if prof.cuda is not None and not target.ccs:
        # a GPU profile planned on a machine without GPUs (a build host): the profile's
        # GPUs, any driver; the RAM and CPUs still size the flash-attn build here
        target = replace(
            target,
            ccs=prof.match.compute_capabilities,
            driver=None,
            driver_text="",
            source=f"{source} (no GPU: the profile's GPUs)",
        )
    elif prof.cuda is None:
        target = replace(target, ccs=(), driver=None, driver_text="")
    return prof, how, target


def _base_python(given: str | None, want: str, *, probe: bool) -> tuple[str, str]:
    """The interpreter that makes the venv, and a note when it is not the profile's."""
    if given is not None:
        if probe and _version_of(given) is None:
            raise ToolError(f"--python {given}: does not run; give a Python {want} interpreter")
        return given, ""
    name = f"python{want}"
    if not probe or _version_of(name) == want:
        return name, ""
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return sys.executable, (
        f"python: {name} does not run here; using {sys.executable} ({here}), "
        f"not the profile's {want} (--python PATH picks another)"
    )


def _version_of(python: str) -> str | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _shop_r1_source() -> str:
    """This checkout when shop-r1 runs from one; else the same release from the index."""
    import shop_r1_doctor

    root = Path(shop_r1_doctor.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        return str(root)
    return f"shop-r1=={shop_r1_doctor.__version__}"
