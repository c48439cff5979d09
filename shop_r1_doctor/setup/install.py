"""A profile's stack as one ordered install into a new virtual environment.

A pure renderer: (profile, extras, the target machine's facts, options) -> the files
(requirements, constraints) and the commands, each with its reason. The order is the
one that keeps vLLM from swapping torch: torch alone from the index this machine's GPUs
*and* driver can run (`torch_index`), then everything else under the profile's one
constraints file (`profiles.resolve`) whose torch line names that exact build: vLLM, the
flash-attn wheel or a throttled source build, the training libraries, shop-r1 itself.
`shop-r1 setup` prints it (`--dry-run`) or runs it; the Apptainer definition runs the
same steps inside an image.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from packaging.version import Version

from shop_r1_doctor import builds
from shop_r1_doctor.builds import TorchBuild, choose_torch_build, unrunnable_reason
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.facts import Facts, parse_version
from shop_r1_doctor.hardware import CC
from shop_r1_doctor.profiles.model import Profile
from shop_r1_doctor.profiles.resolve import resolve
from shop_r1_doctor.setup.activate import activation_files, check_env

SETUP_SCHEMA = "shop-r1.setup/1"
# Build helpers flash-attn's setup.py imports without build isolation (setuptools < 81:
# flash-attn 2.8.x's setup.py predates setuptools 81's removals). Same as the image's.
BUILD_HELPERS = (
    "ninja==1.13.2",
    "packaging==26.3",
    "psutil==7.2.2",
    "setuptools==80.9.0",
    "wheel==0.45.1",
)
Installer = Literal["uv", "pip"]


@dataclass(frozen=True)
class Target:
    """The machine the environment is for: what decides the torch build and the build jobs."""

    ccs: tuple[CC, ...] = ()
    driver: Version | None = None
    driver_text: str = ""
    os_name: str = "linux"
    ram_bytes: int | None = None
    cpus: int | None = None
    source: str = ""  # "this machine", "snapshot h100.json", "profile hopper"

    @classmethod
    def from_facts(cls, facts: Facts, source: str) -> Target:
        ram, cpus = facts.host.ram_bytes, facts.host.cpu_count
        driver = facts.driver.version
        return cls(
            ccs=tuple(sorted(set(facts.ccs()))),
            driver=parse_version(driver),
            driver_text=driver if isinstance(driver, str) else "",
            os_name=facts.os or "linux",
            ram_bytes=ram if isinstance(ram, int) else None,
            cpus=cpus if isinstance(cpus, int) else None,
            source=source,
        )

    @classmethod
    def of_profile(cls, profile: Profile) -> Target:
        """No machine facts: the profile's GPUs, any driver (an image built elsewhere)."""
        return cls(ccs=profile.match.compute_capabilities, source=f"profile {profile.name}")


@dataclass(frozen=True)
class Step:
    name: str  # venv, torch, vllm, flash-attn-helpers, flash-attn, libraries, shop-r1, doctor
    argv: tuple[str, ...]
    reason: str
    env: tuple[tuple[str, str], ...] = ()

    def shell(self) -> str:
        prefix = [f"{k}={shlex.quote(v)}" for k, v in self.env]
        return " ".join([*prefix, *(shlex.quote(a) for a in self.argv)])

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "argv": list(self.argv),
            "env": dict(self.env),
            "command": self.shell(),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class InstallPlan:
    profile: Profile
    extras: tuple[str, ...]
    target: Target
    installer: Installer
    base_python: str  # the interpreter that makes the venv
    venv: str
    torch: TorchBuild
    requirements: str
    constraints: str
    steps: tuple[Step, ...]
    decisions: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    files_dir: str = ""  # where requirements.txt / constraints.txt are written
    # the profile's environment, written into the venv's activation (setup/activate.py)
    env: tuple[tuple[str, str], ...] = ()

    @property
    def python(self) -> str:
        return f"{self.venv}/bin/python"

    def files(self) -> dict[str, str]:
        return {"requirements.txt": self.requirements, "constraints.txt": self.constraints}

    def to_json(self) -> dict[str, Any]:
        t = self.target
        return {
            "schema": SETUP_SCHEMA,
            "profile": self.profile.name,
            "extras": list(self.extras),
            "target": {
                "source": t.source,
                "compute_capabilities": [f"{a}.{b}" for a, b in t.ccs],
                "driver": t.driver_text or (str(t.driver) if t.driver else None),
                "os": t.os_name,
                "ram_bytes": t.ram_bytes,
                "cpus": t.cpus,
            },
            "installer": self.installer,
            "base_python": self.base_python,
            "venv": self.venv,
            "python": self.python,
            "torch": {
                "version": str(self.torch.version),
                "variant": self.torch.variant,
                "index_url": self.torch.index_url,
                "reason": self.torch.reason,
            },
            "files": {
                name: {"path": f"{self.files_dir}/{name}", "text": text}
                for name, text in self.files().items()
            },
            "steps": [s.to_json() for s in self.steps],
            "decisions": list(self.decisions),
            "skipped": list(self.skipped),
            "env": dict(self.env),
            "activation": activation_files(self.venv) if self.env else [],
        }


def build_jobs(profile: Profile, target: Target) -> tuple[int, str]:
    return builds.build_jobs(profile.flash_attn.max_jobs or 4, target.ram_bytes, target.cpus)


def pick_torch(profile: Profile, target: Target) -> TorchBuild:
    built = choose_torch_build(
        profile.torch.version,
        profile.torch.variant,
        target.ccs,
        target.driver,
        os_name=target.os_name,
        profile_index=profile.torch.index_url,
    )
    if built is None:
        raise ToolError(
            f"profile {profile.name}: "
            + unrunnable_reason(profile.torch.version, target.ccs, target.driver)
            + f"; upgrade the NVIDIA driver to >= {profile.cuda.min_driver_text if profile.cuda else '?'}"
        )
    return built


def vllm_blocker(profile: Profile, torch: TorchBuild) -> str:
    """Why the profile's vLLM cannot go on this torch build ("" when it can)."""
    return builds.vllm_wheel_blocker(profile.vllm, torch.variant) if profile.vllm else ""


def requirements_text(profile: Profile, extras: Sequence[str]) -> str:
    lines = [f"{dist}{spec}" for dist, spec in sorted(profile.packages.items())]
    for extra in extras:
        lines += [f"{d}=={v}" for d, v in sorted(profile.extras[extra].packages.items())]
    header = (
        f"# Generated by shop-r1 setup from profile {profile.name}"
        f"{''.join(f' --with {e}' for e in extras)}: the training libraries, in the\n"
        "# profile's ranges. Installed after torch, under constraints.txt.\n"
    )
    return header + "\n".join(lines) + "\n"


def constraints_text(profile: Profile, extras: Sequence[str], torch: TorchBuild) -> str:
    """The profile's one constraints file, with torch pinned to the build chosen here."""
    resolved = resolve(profile, extras)
    if resolved.conflicts:
        raise ToolError(
            f"{profile.path}: the profile and --with {','.join(extras) or '-'} conflict: "
            + "; ".join(resolved.conflicts)
        )
    lines = [
        f"torch=={torch.local}" if pin.dist == "torch" else pin.line() for pin in resolved.pins
    ]
    header = (
        "# Generated by shop-r1 setup: every install after torch runs under this file, so no\n"
        f"# later step can swap torch {torch.local} or a version an earlier step chose.\n"
    )
    return header + "\n".join(lines) + "\n"


@dataclass
class _Builder:
    installer: Installer
    python: str
    steps: list[Step] = field(default_factory=list)

    def install(
        self, name: str, args: Sequence[str], reason: str, env: Sequence[tuple[str, str]] = ()
    ) -> None:
        if self.installer == "uv":
            argv = ("uv", "pip", "install", "--python", self.python, *args)
        else:
            argv = (self.python, "-m", "pip", "install", *args)
        self.steps.append(Step(name, argv, reason, tuple(env)))


def install_plan(
    profile: Profile,
    extras: Sequence[str],
    target: Target,
    *,
    venv: str,
    base_python: str,
    installer: Installer = "pip",
    files_dir: str | None = None,
    torch_index: str | None = None,
    shop_r1_source: str = "shop-r1",
    python_note: str = "",
) -> InstallPlan:
    """The ordered install. `torch_index` replaces the index (a mirror), never the build."""
    extras = tuple(sorted(set(extras)))
    files_dir = files_dir or f"{venv}/shop-r1-setup"
    torch = pick_torch(profile, target)
    index = torch_index or torch.index_url
    constraints_path = f"{files_dir}/constraints.txt"
    decisions = [
        f"profile {profile.name}: {profile.summary}",
        f"torch {torch.local}: {torch.reason}",
    ]
    if python_note:
        decisions.append(python_note)
    if torch_index:
        decisions.append(f"torch index: {torch_index} (given), for {torch.index_url}")
    skipped: list[str] = []
    b = _Builder(installer, f"{venv}/bin/python")
    if installer == "uv":
        venv_argv: tuple[str, ...] = ("uv", "venv", "--python", base_python, venv)
    else:
        venv_argv = (base_python, "-m", "venv", venv)
    b.steps.append(Step("venv", venv_argv, f"a new virtual environment ({base_python})"))
    b.install(
        "torch",
        [f"torch=={torch.local}", "--index-url", index],
        "torch first and alone, from the index of the build this machine runs",
    )
    pinned = ["-c", constraints_path]
    extra_index = ["--extra-index-url", index]
    if profile.vllm is not None:
        blocker = vllm_blocker(profile, torch)
        if blocker:
            skipped.append(
                f"vLLM {profile.vllm}: {blocker}; after the NVIDIA driver is >= "
                f"{profile.cuda.min_driver_text if profile.cuda else '?'}, run setup again "
                "(GRPO generates with transformers meanwhile)"
            )
        else:
            b.install(
                "vllm",
                [f"vllm=={profile.vllm}", *pinned, *extra_index],
                f"vLLM pins torch=={profile.torch.version}: the constraints keep the {torch.variant} build",
            )
    fa = profile.flash_attn
    if fa.mode != "none" and fa.version is not None:
        jobs, why = build_jobs(profile, target)
        decisions.append(why)
        env = [("MAX_JOBS", str(jobs)), ("NVCC_THREADS", str(fa.nvcc_threads or 2))]
        if fa.mode == "source":
            env += [
                ("FLASH_ATTN_CUDA_ARCHS", fa.cuda_archs or ""),
                ("FLASH_ATTENTION_FORCE_BUILD", "TRUE"),
            ]
        b.install(
            "flash-attn-helpers",
            [*BUILD_HELPERS, *pinned],
            "what flash-attn's setup.py imports without build isolation",
        )
        b.install(
            "flash-attn",
            ["--no-build-isolation", f"flash-attn=={fa.version}", *pinned],
            f"flash-attn {fa.version} ({fa.mode}"
            + (f", archs {fa.cuda_archs}" if fa.mode == "source" else "")
            + "), throttled so nvcc cannot exhaust RAM",
            env,
        )
    else:
        skipped.append(
            f"flash-attn: none on profile {profile.name} (attention: {profile.attention})"
        )
    b.install(
        "libraries",
        ["-r", f"{files_dir}/requirements.txt", *pinned, *extra_index],
        "the training libraries in the profile's ranges",
    )
    b.install(
        "shop-r1",
        [shop_r1_source, *pinned, *extra_index],
        "shop-r1 itself, so the new environment can check itself",
    )
    check_env(profile.env, profile.where("env"))
    profile_env = tuple(sorted(profile.env.items()))
    b.steps.append(
        Step(
            "doctor",
            (b.python, "-m", "shop_r1.cli", "doctor", "--json"),
            "the doctor in the new environment, with its own interpreter"
            + (
                " and the profile's environment, as an activated venv has it" if profile_env else ""
            ),
            profile_env,
        )
    )
    return InstallPlan(
        profile=profile,
        extras=extras,
        target=target,
        installer=installer,
        base_python=base_python,
        venv=venv,
        torch=torch,
        requirements=requirements_text(profile, extras),
        constraints=constraints_text(profile, extras, torch),
        steps=tuple(b.steps),
        decisions=tuple(decisions),
        skipped=tuple(skipped),
        files_dir=files_dir,
        env=profile_env,
    )


def render_text(plan: InstallPlan) -> str:
    """The reviewed plan, as `--dry-run` prints it."""
    out = [f"# shop-r1 setup: profile {plan.profile.name} for {plan.target.source}"]
    out += [f"#   {d}" for d in plan.decisions]
    out += [f"#   skipped: {s}" for s in plan.skipped]
    for name, text in plan.files().items():
        out += ["", f"# {plan.files_dir}/{name}", *text.rstrip("\n").splitlines()]
    if plan.env:
        files = ", ".join(activation_files(plan.venv))
        out += ["", f"# the profile's environment, written into {files}:"]
        out += [f"export {k}={shlex.quote(v)}" for k, v in plan.env]
    out += ["", f"# commands ({plan.installer}), in order:"]
    for i, step in enumerate(plan.steps, 1):
        out += [f"# {i}. {step.name}: {step.reason}", step.shell()]
    return "\n".join(out) + "\n"
