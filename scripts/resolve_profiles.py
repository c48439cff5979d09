"""Do each profile's pins resolve together on the real package index? pip's own resolver says.

For every profile: `pip install --dry-run --report - --ignore-installed --only-binary=:all:
--platform <tags> --python-version <profile's python> -r <requirements> -c <constraints>`,
the same requirements and constraints `shop-r1 setup` writes. The CUDA torch builds live on
the PyTorch index, which this project's machines and CI cannot reach: the torch pin is
resolved as the same public version from the index that *is* reachable (PyPI's torch),
and the output says so for each profile. flash-attn is a source build (no wheel to
resolve) and is left out, said too.

    python scripts/resolve_profiles.py [--profile NAME ...] [--out FILE.json] [--timeout S]
    python scripts/resolve_profiles.py --libraries [...]

`--libraries` resolves every pin except torch, vLLM and flash-attn (which come from the
PyTorch index or a source build) together: the profile's libraries (transformers, TRL,
liger-kernel, ...) and shop-r1's own runtime and `train` requirements (accelerate,
datasets, ...), under the profile's constraints. torch stands in as a metadata-only wheel
of the profile's torch version with no dependencies (built here, offered through
--find-links, pinned by its local label), so each library's requirement on torch is still
checked against the profile's version while torch's own CUDA dependencies, which the
reachable index lacks, are not asked for.

Exit 0 when no profile conflicts (`unverified`: the resolution stopped at a torch
dependency the reachable index lacks, said per profile), 1 on a conflict or timeout, 3
when the index is not reachable (a clear skip, for CI).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shop_r1_doctor.profiles.model import load_profiles
from shop_r1_doctor.setup.install import Target, install_plan

# manylinux tags pip accepts for an x86_64 Linux (glibc 2.28+, what the base images have)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "linux_x86_64",
)
UNREACHABLE = 3
ROOT = Path(__file__).resolve().parents[1]
# what --libraries leaves to the PyTorch index or a source build
NOT_LIBRARIES = ("torch", "vllm", "flash-attn")
STUB_LABEL = "resolvecheck"  # local version label of the stand-in torch


def _name(line: str) -> str:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    return canonicalize_name(Requirement(line).name)


def shop_r1_requirements() -> list[str]:
    """shop-r1's runtime and `train` requirements (what the setup's last step installs)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["train"]]


def stub_torch(version: str, wheels: Path) -> str:
    """A metadata-only torch wheel of `version`, no dependencies; returns its pin."""
    import zipfile

    local = f"{version}+{STUB_LABEL}"
    dist = f"torch-{local}.dist-info"
    files = {
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {local}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: resolve_profiles\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{dist}/RECORD": "",
    }
    wheels.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheels / f"torch-{local}-py3-none-any.whl", "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return f"torch=={local}"


def library_files(profile_name: str, tmp: Path) -> tuple[Path, Path, list[str], str]:
    """The requirements and constraints of `--libraries`: all but torch, vLLM, flash-attn."""
    prof = load_profiles()[profile_name]
    plan = install_plan(prof, (), Target.of_profile(prof), venv="/v", base_python="python3")

    def kept(lines: list[str]) -> list[str]:
        return [
            ln for ln in lines if ln and not ln.startswith("#") and _name(ln) not in NOT_LIBRARIES
        ]

    req = tmp / f"{prof.name}.libraries.txt"
    con = tmp / f"{prof.name}.libraries-constraints.txt"
    req.write_text(
        "\n".join(kept(plan.requirements.splitlines()) + kept(shop_r1_requirements())) + "\n"
    )
    pin = stub_torch(str(prof.torch.version), tmp / "wheels")
    con.write_text("\n".join([*kept(plan.constraints.splitlines()), pin]) + "\n")
    notes = [
        f"torch {plan.torch.local}: a dependency-free stand-in of version {prof.torch.version}; "
        "the libraries' torch requirements are checked against it, torch's own are not",
    ]
    if prof.vllm is not None:
        notes.append(f"vLLM {prof.vllm}: left out (its wheels pin torch's CUDA build)")
    if prof.flash_attn.mode != "none":
        notes.append(
            f"flash-attn {prof.flash_attn.version}: left out ({prof.flash_attn.mode} build)"
        )
    return req, con, notes, prof.python


def requirement_files(profile_name: str, tmp: Path) -> tuple[Path, Path, list[str], str]:
    prof = load_profiles()[profile_name]
    plan = install_plan(prof, (), Target.of_profile(prof), venv="/v", base_python="python3")
    notes = []
    req = tmp / f"{prof.name}.requirements.txt"
    con = tmp / f"{prof.name}.constraints.txt"
    torch_public = str(prof.torch.version)
    lines = [f"torch=={torch_public}"]
    if prof.vllm is not None:
        lines.append(f"vllm=={prof.vllm}")
    lines += [ln for ln in plan.requirements.splitlines() if ln and not ln.startswith("#")]
    req.write_text("\n".join(lines) + "\n")
    con.write_text(
        "\n".join(
            f"torch=={torch_public}" if ln.startswith("torch==") else ln
            for ln in plan.constraints.splitlines()
            if ln and not ln.startswith("#")
        )
        + "\n"
    )
    notes.append(
        f"torch {plan.torch.local} lives on {plan.torch.index_url} (not reachable here): "
        f"resolved as torch=={torch_public} from the reachable index"
    )
    if prof.flash_attn.mode != "none":
        notes.append(
            f"flash-attn {prof.flash_attn.version} is a {prof.flash_attn.mode} build: no wheel to "
            "resolve, not checked"
        )
    return req, con, notes, prof.python


def resolve(
    profile_name: str, tmp: Path, timeout: float, libraries: bool = False
) -> dict[str, object]:
    files = library_files if libraries else requirement_files
    req, con, notes, python = files(profile_name, tmp)
    cmd = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-", "--quiet",
        "--ignore-installed", "--only-binary=:all:", "--python-version", python,
        "--retries", "1", "--timeout", "20", "-r", str(req), "-c", str(con),
    ]  # fmt: skip
    for tag in PLATFORMS:
        cmd += ["--platform", tag]
    if libraries:
        cmd += ["--find-links", str(tmp / "wheels")]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"profile": profile_name, "status": "timeout", "seconds": timeout, "notes": notes}
    seconds = round(time.monotonic() - start, 1)
    if proc.returncode != 0:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        unreachable = any("Could not fetch URL" in ln or "NewConnectionError" in ln for ln in err)
        # torch's own CUDA wheels (nvidia-*, cuda-*) missing from the reachable index: the
        # pins could not be checked past torch, which is not a conflict between them
        missing = re.search(
            r"requirement ((?:nvidia|cuda)-[\w.-]+==[\w.]+) \(from torch\)", proc.stderr
        )
        status = "unreachable" if unreachable else "unverified" if missing else "conflict"
        if missing:
            notes = [
                *notes,
                f"torch's dependency {missing.group(1)} is not on the reachable index: "
                "the resolution stopped at torch",
            ]
        return {
            "profile": profile_name,
            "status": status,
            "seconds": seconds,
            "error": " | ".join(err[-6:])[:1500],
            "notes": notes,
        }
    report = json.loads(proc.stdout)
    chosen = {
        _name(item["metadata"]["name"]): item["metadata"]["version"]
        for item in report.get("install", [])
    }
    keys = (
        "torch",
        "vllm",
        "transformers",
        "trl",
        "liger-kernel",
        "accelerate",
        "datasets",
        "peft",
    )
    return {
        "profile": profile_name,
        "status": "resolves",
        "seconds": seconds,
        "packages": len(chosen),
        "chosen": {k: chosen[k] for k in keys if k in chosen},
        "notes": notes,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="append", help="only this profile (repeatable)")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per profile")
    ap.add_argument(
        "--libraries",
        action="store_true",
        help="resolve every pin but torch, vLLM and flash-attn together (torch as a stand-in)",
    )
    args = ap.parse_args(argv)
    names = args.profile or sorted(load_profiles())
    unknown = [n for n in names if n not in load_profiles()]
    if unknown:
        print(f"error: --profile {unknown[0]}: no such profile", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = resolve(name, Path(tmp), args.timeout, args.libraries)
            if r["status"] == "unreachable":
                print("skip: the package index is not reachable; no profile was resolved")
                return UNREACHABLE
            results.append(r)
            chosen = ", ".join(f"{k} {v}" for k, v in r.get("chosen", {}).items())  # type: ignore[attr-defined]
            print(f"{name}: {r['status']} in {r['seconds']} s" + (f" ({chosen})" if chosen else ""))
            if "error" in r:
                print(f"  error: {r['error']}")
            for note in r["notes"]:  # type: ignore[attr-defined]
                print(f"  not checked: {note}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    bad = [r for r in results if r["status"] in ("conflict", "timeout")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
