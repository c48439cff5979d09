"""The human report, grouped by subject like `flutter doctor`.

    [✓] System: Ubuntu 24.04.3 LTS x86_64, docker, Python 3.12.3
    [✗] PyTorch 2.6.0+cu124: CUDA 12.4, 1 GPU visible
        ✗ torch 2.6.0+cu124 has no kernels for sm_120 (NVIDIA GeForce RTX 5090) [TORCH_NO_BLACKWELL_ARCH]
          fix: pip install torch --index-url https://download.pytorch.org/whl/cu128

Marks: ✓ fine, ! warnings, ✗ errors, ☠ a probe of that subject crashed or timed out,
- not probed. `verbose` adds every fact and each probe's timing. When the console
cannot encode the symbols (GBK, cp1252), plain ASCII marks are used instead. Each
finding is the block every command prints (render/findings.py), indented under its subject.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shop_r1_doctor.diagnose import Diagnosis
from shop_r1_doctor.facts import Facts, shown
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.render import facts_text as ft
from shop_r1_doctor.render.findings import (
    ASCII,
    UNICODE,
    Symbols,
    colored,
    finding_lines,
    fit_encoding,
    symbols_for,
)

__all__ = ["ASCII", "UNICODE", "Symbols", "render_terminal", "summary_line", "symbols_for"]


@dataclass(frozen=True)
class Group:
    key: str
    subjects: frozenset[str]  # Finding.subject values shown in this group
    probes: tuple[str, ...]  # probe names (prefixes) whose status marks this group
    headline: Callable[[Facts], str]
    facts: Callable[[Facts], list[str]]


GROUPS = (
    Group(
        "platform",
        frozenset({"platform", "resources", "host", "env"}),
        ("host", "env"),
        ft.platform_headline,
        ft.platform_facts,
    ),
    Group("gpu", frozenset({"gpu", "driver"}), ("gpu",), ft.gpu_headline, ft.gpu_facts),
    Group(
        "cuda-toolkit",
        frozenset({"cuda-toolkit"}),
        ("cuda_toolkit",),
        ft.toolkit_headline,
        ft.toolkit_facts,
    ),
    Group("torch", frozenset({"torch", "nccl"}), ("torch",), ft.torch_headline, ft.torch_facts),
    Group(
        "packages",
        frozenset({"packages", "trl"}),
        ("packages", "imports.deepspeed", "imports.apex"),
        ft.packages_headline,
        ft.packages_facts,
    ),
    Group(
        "flash-attn",
        frozenset({"flash-attn"}),
        ("imports.flash_attn", "imports.flash_attn_interface"),
        ft.flash_attn_headline,
        ft.flash_attn_facts,
    ),
    Group("vllm", frozenset({"vllm"}), ("imports.vllm",), ft.vllm_headline, ft.vllm_facts),
    Group("ray", frozenset({"ray"}), ("ray",), ft.ray_headline, ft.ray_facts),
    Group("docker", frozenset({"docker"}), ("docker",), ft.docker_headline, ft.docker_facts),
    Group("plan", frozenset({"plan"}), (), ft.plan_headline, ft.plan_facts),
    Group("profile", frozenset({"profile"}), (), lambda snap: "Profile", lambda snap: []),
    Group("doctor", frozenset({"doctor"}), (), ft.doctor_headline, ft.doctor_facts),
)


def _extra_group(subject: str) -> Group:
    """A group for a finding subject this renderer has no headline for."""

    def headline(facts: Facts) -> str:
        return subject.replace("-", " ").capitalize()

    return Group(subject, frozenset({subject}), (), headline, lambda facts: [])


def _probe_states(facts: Facts, names: tuple[str, ...]) -> list[str]:
    return [
        shown(rec.status, "None")
        for name, rec in facts.probes.items()
        if any(name == n or name.startswith(n + ".") for n in names)
    ]


def _state(findings: list[Finding], probe_states: list[str]) -> str:
    if any(s in ("crash", "timeout") for s in probe_states):
        return "crash"
    if any(f.severity == "error" for f in findings):
        return "error"
    if any(f.severity == "warning" for f in findings):
        return "warning"
    if probe_states and all(s == "skipped" for s in probe_states):
        return "skipped"
    return "ok"


def render_terminal(
    diagnosis: Diagnosis,
    *,
    verbose: bool = False,
    encoding: str | None = "utf-8",
    color: bool = False,
) -> str:
    sym = symbols_for(encoding)
    facts = Facts(diagnosis.snapshot)
    by_group: dict[str, list[Finding]] = {}
    known = {s: g.key for g in GROUPS for s in g.subjects}
    extra: list[str] = []
    for f in diagnosis.findings:
        key = known.get(f.subject, f.subject)
        if key not in known.values() and key not in extra:
            extra.append(key)
        by_group.setdefault(key, []).append(f)

    out: list[str] = []
    groups = list(GROUPS) + [_extra_group(k) for k in extra]
    for group in groups:
        findings = by_group.get(group.key, [])
        states = _probe_states(facts, group.probes)
        if group.key == "plan" and not findings and not facts.known_as_object("plan"):
            continue
        if group.key == "doctor" and not findings and not verbose:
            continue
        if group.key == "profile" and not findings and not diagnosis.profile:
            continue
        # No engine here (or a snapshot from before the docker probe): nothing to say.
        if group.key == "docker" and not findings and not facts.docker:
            continue
        headline = _profile_headline(diagnosis) if group.key == "profile" else group.headline(facts)
        state = _state(findings, states)
        if state == "ok" and ": unknown" in headline:
            state = "skipped"  # a dump that does not say: nothing was checked here
        mark = getattr(sym, state)
        if color:
            mark = colored(mark, state)
        out.append(f"{mark} {headline}")
        if verbose:
            out += [f"    {sym.bullet} {line}" for line in group.facts(facts)]
            out += [f"    {sym.bullet} {line}" for line in ft.probe_lines(facts, group.probes)]
        for f in findings:
            # the one finding block every command prints (render/findings.py)
            out += [
                f"    {line}"
                for line in finding_lines(f, symbols=sym, verbose=verbose, color=color)
            ]
    if diagnosis.fix_plan is not None:
        from shop_r1_doctor.fixplan import PLAN_HEADING, render_lines

        out.append("")
        out.append(PLAN_HEADING.format(profile=diagnosis.fix_plan.profile))
        out += [f"  {line}" for line in render_lines(diagnosis.fix_plan)]
    out.append("")
    out.append(summary_line(diagnosis))
    # Finding text may hold characters the console lacks (≥, ×): replace, never crash.
    return fit_encoding("\n".join(out) + "\n", encoding)


def _profile_headline(diagnosis: Diagnosis) -> str:
    if not diagnosis.profile:
        return "Profile: no shipped profile matches these GPUs"
    reason = f" for {diagnosis.profile_reason}" if diagnosis.profile_reason else ""
    return f"Profile {diagnosis.profile}{reason}"


def summary_line(diagnosis: Diagnosis) -> str:
    s = diagnosis.summary
    profile = f" (profile: {diagnosis.profile})" if diagnosis.profile else ""
    source = Facts(diagnosis.snapshot).source
    # A pasted dump says only part of the story: say so next to the verdict.
    partial = (
        f" Checked only what {shown(source.file, 'None')} says." if source.kind == "dump" else ""
    )
    if not s.errors and not s.warnings:
        return f"Doctor summary{profile}: no issues found.{partial}"
    parts = [f"{s.errors} error{'s' if s.errors != 1 else ''}"]
    parts.append(f"{s.warnings} warning{'s' if s.warnings != 1 else ''}")
    tail = " Fix the errors before training." if s.errors else ""
    return f"Doctor summary{profile}: {', '.join(parts)}.{tail}{partial}"
