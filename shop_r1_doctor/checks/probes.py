"""How the doctor's own probes went: a crashed or hung probe is itself a finding."""

from __future__ import annotations

from collections.abc import Iterator

from shop_r1_doctor.checks._base import finding, torch_version, uses_vllm
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding, Severity
from shop_r1_doctor.target_python import pip_command

# What training needs from each probed import, to decide how bad a crash is.
TORCH_PROBES = ("torch",)


def _needed(facts: Facts, probe: str) -> bool:
    """Does the training plan need what this probe imports?"""
    if probe in TORCH_PROBES:
        return True
    module = probe.removeprefix("imports.")
    if module.startswith("flash_attn"):
        impl = facts.plan.attn_implementation
        return impl is not None and impl.startswith("flash_attention")
    if module.startswith("vllm"):
        return uses_vllm(facts)
    return False


def probe_status(facts: Facts) -> Iterator[Finding]:
    records = facts.probes
    for name in sorted(records):
        record = records[name]
        status, detail = record.status, str(record.detail or "")
        needed = _needed(facts, name)
        severity: Severity = "error" if needed else "warning"
        if status == "crash" and name in TORCH_PROBES and facts.wsl:
            yield finding(
                "WSL_CUDA_INIT_DOUBLE_FREE",
                f"torch's CUDA initialisation crashed on WSL{facts.wsl} ({detail or 'killed by a signal'})",
                detail="'free(): double free detected in tcache 2' then SIGABRT in "
                "torch.cuda.is_available(): a WSL driver/CUDA_VISIBLE_DEVICES problem.",
            )
        elif status == "crash":
            yield finding(
                "PROBE_CRASH",
                f"probe {name!r} crashed: {detail or 'killed by a signal'}",
                severity=severity,
                detail=_impact(name, needed),
                fix=_by_hand(name),
            )
        elif status == "timeout":
            yield finding(
                "PROBE_TIMEOUT",
                f"probe {name!r} did not answer ({detail or 'timed out'})",
                severity=severity if name in TORCH_PROBES else "warning",
                detail=_impact(name, needed),
                fix=_by_hand(name),
            )
        elif status == "error" and not name.startswith("imports."):
            yield finding(
                # only torch is needed among non-import probes, and its impact reads the same
                "PROBE_ERROR",
                f"probe {name!r} failed: {detail}",
                detail=_impact(name, needed),
            )


def torch_import(facts: Facts) -> Iterator[Finding]:
    t = facts.torch
    err = t.error if t else None
    if not isinstance(err, str) or not err or (t and t.version):
        return
    if err.startswith(("crash", "timeout")):
        return  # probe_status reports those with the probe
    yield finding(
        "TORCH_IMPORT_FAILED",
        f"torch {torch_version(facts) or ''} does not import: {err.splitlines()[0][:160]}".replace(
            "  ", " "
        ),
        detail=err,
        fix=f"{pip_command(facts)} install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130",
    )


def _impact(name: str, needed: bool) -> str:
    if name in TORCH_PROBES:
        return "Training imports torch the same way: it will crash or hang the same way."
    if needed:
        return "The plan needs this package; training will hit the same failure."
    return "The facts this probe collects are unknown; other checks skip them."


def _by_hand(name: str) -> str:
    if name in TORCH_PROBES:
        return 'python -c "import torch; print(torch.cuda.is_available())"'
    if name.startswith("imports."):  # probes/collect.py names each import group so
        return f'python -c "import {name.removeprefix("imports.")}"'
    return "shop-r1 doctor -v (shows each probe's detail)"


CHECKS = (probe_status, torch_import)
