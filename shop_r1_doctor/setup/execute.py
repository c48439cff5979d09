"""Run an InstallPlan: a new virtual environment, its install, then the doctor inside it.

Never installs into an existing environment: the venv path must be new or empty, and
not the interpreter running shop-r1. Each step's output goes to a log beside the plan's
files; a failing step is one line naming the step, its exit status, its last output
line and the log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.setup.activate import write_activation
from shop_r1_doctor.setup.install import InstallPlan, Step


@dataclass
class StepResult:
    name: str
    returncode: int
    seconds: float


@dataclass
class SetupResult:
    steps: list[StepResult] = field(default_factory=list)
    doctor_exit: int | None = None
    doctor_summary: dict[str, Any] | None = None
    doctor_profile: str | None = None
    doctor_findings: list[dict[str, Any]] = field(default_factory=list)
    doctor_python: str | None = None  # the interpreter the doctor saw: the new venv's
    doctor_torch: str | None = None
    log: str = ""
    activation: list[str] = field(default_factory=list)  # files carrying the profile's env

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": [
                {"name": s.name, "returncode": s.returncode, "seconds": round(s.seconds, 1)}
                for s in self.steps
            ],
            "doctor": {
                "exit_code": self.doctor_exit,
                "profile": self.doctor_profile,
                "python": self.doctor_python,
                "torch": self.doctor_torch,
                "summary": self.doctor_summary,
                "findings": [
                    {k: f.get(k) for k in ("code", "severity", "title")}
                    for f in self.doctor_findings
                ],
            },
            "log": self.log,
            "activation": self.activation,
        }


def check_new_venv(venv: Path) -> None:
    """Refuse a path that holds anything, or the environment shop-r1 runs in."""
    resolved = venv.expanduser().resolve()
    active = {Path(sys.prefix).resolve()}
    if os.environ.get("VIRTUAL_ENV"):
        active.add(Path(os.environ["VIRTUAL_ENV"]).resolve())
    if resolved in active:
        raise ToolError(
            f"--venv {venv}: is the environment shop-r1 runs in; setup only creates a new "
            "one (give a new path)"
        )
    if resolved.exists() and (not resolved.is_dir() or any(resolved.iterdir())):
        raise ToolError(
            f"--venv {venv}: exists and is not empty; setup only creates a new environment "
            "(give a new path, or remove it)"
        )


def _env(plan: InstallPlan, step: Step) -> dict[str, str]:
    """The step's environment: the new venv first on PATH, nothing of the caller's
    environment (PYTHONPATH, an active venv) that would make it import or install elsewhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PIP_USER")
    }
    venv = str(Path(plan.venv))
    env["VIRTUAL_ENV"] = venv
    env["PATH"] = f"{venv}/bin{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(dict(step.env))
    return env


def execute(
    plan: InstallPlan, *, on_step: Callable[[str], None] = lambda line: None
) -> SetupResult:
    check_new_venv(Path(plan.venv))
    files_dir = Path(plan.files_dir)
    log_path = files_dir / "setup.log"
    result = SetupResult(log=str(log_path))
    total = len(plan.steps)
    for i, step in enumerate(plan.steps, 1):
        on_step(f"[{i}/{total}] {step.name}: {step.reason}")
        start = time.monotonic()
        if step.name == "doctor":
            proc = subprocess.run(
                step.argv, env=_env(plan, step), capture_output=True, text=True, check=False
            )
            _append(log_path, step, proc.stderr)
            result.steps.append(StepResult(step.name, proc.returncode, time.monotonic() - start))
            _read_doctor(result, proc.stdout, step, log_path)
            on_step(f"      doctor exit {proc.returncode} ({time.monotonic() - start:.1f} s)")
            continue
        try:
            if step.name == "venv":  # the log lives inside the venv: hold its output until then
                proc = subprocess.run(
                    step.argv, env=_env(plan, step), capture_output=True, text=True, check=False
                )
                if proc.returncode != 0:
                    last = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
                    raise ToolError(
                        f"setup step venv failed (exit {proc.returncode}): {last[-1][:300]}"
                    )
                files_dir.mkdir(parents=True, exist_ok=True)
                for name, text in plan.files().items():
                    (files_dir / name).write_text(text, encoding="utf-8")
                _append(log_path, step, proc.stdout + proc.stderr)
                # an activated venv runs with the profile's settings, like its image
                touched = write_activation(Path(plan.venv), dict(plan.env), plan.profile.name)
                result.activation = touched
                on_step(f"      environment ({len(plan.env)} variable(s)): {', '.join(touched)}")
            else:
                with log_path.open("a", encoding="utf-8") as log:
                    log.write(f"$ {step.shell()}\n")
                    log.flush()
                    proc = subprocess.run(
                        step.argv,
                        env=_env(plan, step),
                        text=True,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        check=False,
                    )
        except FileNotFoundError:
            raise ToolError(f"setup step {step.name}: {step.argv[0]}: not found") from None
        seconds = time.monotonic() - start
        result.steps.append(StepResult(step.name, proc.returncode, seconds))
        if proc.returncode != 0:
            raise ToolError(
                f"setup step {step.name} failed (exit {proc.returncode}): "
                f"{_last_line(log_path)}; full output in {log_path}"
            )
        on_step(f"      ok ({seconds:.1f} s)")
    return result


def _append(path: Path, step: Step, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {step.shell()}\n{text}")


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


def _read_doctor(result: SetupResult, stdout: str, step: Step, log_path: Path) -> None:
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        raise ToolError(
            f"setup step doctor: `{step.shell()}` printed no JSON report; see {log_path}"
        ) from None
    result.doctor_exit = result.steps[-1].returncode
    result.doctor_summary = report.get("summary")
    result.doctor_profile = report.get("profile")
    result.doctor_findings = [f for f in report.get("findings", []) if isinstance(f, dict)]
    facts = Facts(report.get("snapshot") if isinstance(report.get("snapshot"), dict) else {})
    python = facts.host.python
    result.doctor_python = python.executable or None if python else None
    torch = facts.package("torch")
    result.doctor_torch = torch.version or None if torch else None
