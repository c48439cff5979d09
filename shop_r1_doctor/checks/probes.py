"""How the doctor's own probes went: a crashed or hung probe is itself a finding."""

from __future__ import annotations

from collections.abc import Iterator

from shop_r1_doctor.checks._base import attn_impl, finding, pkg_version, uses_vllm
from shop_r1_doctor.facts import Facts
from shop_r1_doctor.findings import Finding, Severity

# What training needs from each probed import, to decide how bad a crash is.
TORCH_PROBES = ("torch",)


def _needed(facts: Facts, probe: str) -> bool:
    """Does the training plan need what this probe imports?"""
    if probe in TORCH_PROBES:
        return True
    module = probe.removeprefix("imports.")
    if module.startswith("flash_attn"):
        return (attn_impl(facts) or "").startswith("flash_attention")
    if module.startswith("vllm"):
        return uses_vllm(facts)
    return False


def probe_status(facts: Facts) -> Iterator[Finding]:
    records = facts.section("probes")
    for name in sorted(records):
        record = records[name]
        if not isinstance(record, dict):
            continue
        status, detail = record.get("status"), str(record.get("detail") or "")
        needed = _needed(facts, name)
        severity: Severity = "error" if needed else "warning"
        if status == "crash":
            if name in TORCH_PROBES and facts.wsl:
                yield finding(
                    "WSL_CUDA_INIT_DOUBLE_FREE",
                    f"torch's CUDA initialisation crashed on WSL{facts.wsl} ({detail or 'killed by a signal'})",
                    detail="'free(): double free detected in tcache 2' then SIGABRT in "
                    "torch.cuda.is_available(): a WSL driver/CUDA_VISIBLE_DEVICES problem.",
                )
                continue
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
                "PROBE_ERROR", f"probe {name!r} failed: {detail}", detail=_impact(name, False)
            )


def torch_import(facts: Facts) -> Iterator[Finding]:
    t = facts.torch
    err = t.get("error") if t else None
    if not isinstance(err, str) or not err or t is None or t.get("version"):
        return
    if err.startswith(("crash", "timeout")):
        return  # probe_status reports those with the probe
    yield finding(
        "TORCH_IMPORT_FAILED",
        f"torch {pkg_version(facts, 'torch') or ''} does not import: {err.splitlines()[0][:160]}".replace(
            "  ", " "
        ),
        detail=err,
        fix="pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cu130",
    )


def _impact(name: str, needed: bool) -> str:
    if name in TORCH_PROBES:
        return "Training imports torch the same way: it will crash or hang the same way."
    if needed:
        return "The plan needs this package; training will hit the same failure."
    return "The facts this probe collects are unknown; other checks skip them."


def _by_hand(name: str) -> str:
    module = "torch" if name in TORCH_PROBES else name.removeprefix("imports.")
    if module == "torch":
        return 'python -c "import torch; print(torch.cuda.is_available())"'
    if "." in name or module in ("flash_attn", "vllm", "deepspeed", "apex"):
        return f'python -c "import {module}"'
    return "shop-r1 doctor -v (shows each probe's detail)"


CHECKS = (probe_status, torch_import)
