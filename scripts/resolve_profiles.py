"""Do each profile's pins resolve together on the real package index? pip's own resolver says.

For every profile: `pip install --dry-run --report - --ignore-installed --only-binary=:all:
--platform <tags> --python-version <profile's python> -r <requirements> -c <constraints>`,
the same requirements and constraints `shop-r1 setup` writes. The CUDA torch builds live on
the PyTorch index, which this project's machines and CI cannot reach: the torch pin is
resolved as the same public version from the index that *is* reachable (PyPI's torch),
and the output says so for each profile. flash-attn is a source build (no wheel to
resolve) and is left out, said too.

    python scripts/resolve_profiles.py [--profile NAME ...] [--out FILE.json] [--timeout S]

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


def resolve(profile_name: str, tmp: Path, timeout: float) -> dict[str, object]:
    req, con, notes, python = requirement_files(profile_name, tmp)
    cmd = [
        sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-", "--quiet",
        "--ignore-installed", "--only-binary=:all:", "--python-version", python,
        "--retries", "1", "--timeout", "20", "-r", str(req), "-c", str(con),
    ]  # fmt: skip
    for tag in PLATFORMS:
        cmd += ["--platform", tag]
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
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in report.get("install", [])
    }
    keys = ("torch", "vllm", "transformers", "trl", "liger-kernel")
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
    args = ap.parse_args(argv)
    names = args.profile or sorted(load_profiles())
    unknown = [n for n in names if n not in load_profiles()]
    if unknown:
        print(f"error: --profile {unknown[0]}: no such profile", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            r = resolve(name, Path(tmp), args.timeout)
            results.append(r)
            chosen = ", ".join(f"{k} {v}" for k, v in r.get("chosen", {}).items())  # type: ignore[attr-defined]
            print(f"{name}: {r['status']} in {r['seconds']} s" + (f" ({chosen})" if chosen else ""))
            if "error" in r:
                print(f"  error: {r['error']}")
            for note in r["notes"]:  # type: ignore[attr-defined]
                print(f"  not checked: {note}")
            if r["status"] == "unreachable":
                print("skip: the package index is not reachable; nothing was checked")
                return UNREACHABLE
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    bad = [r for r in results if r["status"] in ("conflict", "timeout")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
