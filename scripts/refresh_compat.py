"""Refresh vLLM -> torch pins and flash-attn wheel coverage in the compat knowledge.

Reads package-index metadata the way pip does (the PyPI simple index and each wheel's
PEP 658 `.metadata` file, falling back to the JSON API), and flash-attn's GitHub release
assets, then compares them with `shop_r1_doctor/knowledge/compat.yaml`.

    python scripts/refresh_compat.py --check            # report drift, exit 1 if any
    python scripts/refresh_compat.py --write            # rewrite the vllm_torch rows
    python scripts/refresh_compat.py --check --index-dir tests/fixtures/index   # offline

`--index-dir` answers every URL from recorded files (tests; CI has no network).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / "shop_r1_doctor" / "knowledge" / "compat.yaml"
SIMPLE = "https://pypi.org/simple/{dist}/"
JSON_API = "https://pypi.org/pypi/{dist}/{version}/json"
FA_RELEASE = "https://api.github.com/repos/Dao-AILab/flash-attention/releases/tags/v{version}"
WHEEL_LINK = re.compile(
    r'href="(?P<url>[^"#]+/vllm-(?P<ver>[0-9][^-]*)-cp\d+-abi3-manylinux[^"#]*x86_64\.whl)'
)
FA_ASSET = re.compile(
    r"flash_attn-(?P<ver>[^+]+)\+cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+)"
    r"cxx11abi(?P<abi>TRUE|FALSE)-cp(?P<py>\d+)-cp\d+-(?P<plat>\w+)\.whl"
)

Fetch = Callable[[str], bytes]


def http_fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "shop-r1-refresh-compat"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def recorded_fetch(index_dir: Path) -> Fetch:
    """URL -> recorded file (see tests/fixtures/index/README.md for the layout)."""

    def fetch(url: str) -> bytes:
        if m := re.fullmatch(r"https://pypi\.org/simple/([^/]+)/", url):
            path = index_dir / "pypi" / "simple" / f"{m.group(1)}.html"
        elif m := re.search(r"/(vllm)-([0-9][^-]*)-[^/]*\.whl\.metadata$", url):
            path = index_dir / "pypi" / "metadata" / f"{m.group(1)}-{m.group(2)}.METADATA"
        elif m := re.fullmatch(r".*/releases/tags/v(.+)", url):
            path = index_dir / "github" / "flash-attention" / f"v{m.group(1)}.json"
        else:
            raise urllib.error.URLError(f"no recording for {url}")
        if not path.is_file():
            raise urllib.error.URLError(f"no recording for {url} ({path})")
        return path.read_bytes()

    return fetch


def _vkey(text: str) -> Version:
    return Version(text)


def vllm_torch_pins(fetch: Fetch, since: Version) -> dict[Version, Version | None]:
    """vLLM release -> its exact torch pin (None: metadata unavailable)."""
    html = fetch(SIMPLE.format(dist="vllm")).decode()
    links: dict[Version, str] = {}
    for m in WHEEL_LINK.finditer(html):
        try:
            version = Version(m.group("ver"))
        except InvalidVersion:
            continue
        if version >= since and not version.is_prerelease:
            links.setdefault(version, m.group("url"))
    pins: dict[Version, Version | None] = {}
    for version, url in sorted(links.items()):
        pins[version] = _torch_pin(_requires(fetch, url, version))
    return pins


def _requires(fetch: Fetch, wheel_url: str, version: Version) -> list[str]:
    try:
        text = fetch(wheel_url + ".metadata").decode()
        return [
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.startswith("Requires-Dist:")
        ]
    except (urllib.error.URLError, OSError):
        pass
    try:  # older uploads have no PEP 658 file; the JSON API lists requires_dist
        data = json.loads(fetch(JSON_API.format(dist="vllm", version=version)))
        return list(data["info"].get("requires_dist") or [])
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return []


def _torch_pin(requires: list[str]) -> Version | None:
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.name == "torch" and not req.marker:
            pins = [s.version for s in req.specifier if s.operator == "=="]
            if pins:
                return Version(pins[0])
    return None


@dataclass(frozen=True)
class Drift:
    what: str
    counts: bool = True  # False: a note (source unreachable), not a disagreement

    def __str__(self) -> str:
        return f"{'drift' if self.counts else 'note'}: {self.what}"


def vllm_drift(pins: dict[Version, Version | None], compat: object) -> list[Drift]:
    out = []
    for version, pin in pins.items():
        if pin is None:
            continue
        row = compat.vllm_torch_pin(version)  # type: ignore[attr-defined]
        if row is None:
            out.append(Drift(f"vllm {version}: index pins torch=={pin}; compat.yaml has no row"))
        elif Version(row.value) != pin:
            out.append(
                Drift(
                    f"vllm {version}: index pins torch=={pin}; compat.yaml says {row.value} ({row.spec})"
                )
            )
    return out


def flash_attn_drift(fetch: Fetch, compat: object) -> list[Drift]:
    out = []
    for row in compat.flash_attn_wheels:  # type: ignore[attr-defined]
        if not row.release:
            continue
        try:
            data = json.loads(fetch(FA_RELEASE.format(version=row.release)))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            out.append(
                Drift(f"flash-attn v{row.release}: release assets unavailable ({exc})", False)
            )
            continue
        seen: set[tuple[str, int]] = set()
        for asset in data.get("assets", []):
            m = FA_ASSET.fullmatch(asset.get("name", ""))
            if m and m.group("plat") == "linux_x86_64":
                seen.add((m.group("torch"), int(m.group("cuda"))))
        for torch_minor, cuda in sorted(seen):
            if Version(f"{torch_minor}.0") not in row.torch:
                out.append(
                    Drift(
                        f"flash-attn v{row.release}: wheel for torch {torch_minor} but compat.yaml covers {row.torch}"
                    )
                )
            if cuda not in row.cuda_majors:
                out.append(
                    Drift(
                        f"flash-attn v{row.release}: wheel for CUDA {cuda} not in {list(row.cuda_majors)}"
                    )
                )
    return out


def vllm_rows(pins: dict[Version, Version | None], compat: object) -> list[str]:
    """compat.yaml lines for vllm_torch: consecutive releases with one pin become one row."""
    groups: list[tuple[Version, Version, Version]] = []  # first, last, pin
    for version, pin in pins.items():
        if pin is None:
            continue
        if groups and groups[-1][2] == pin:
            groups[-1] = (groups[-1][0], version, pin)
        else:
            groups.append((version, version, pin))
    today = datetime.date.today().isoformat()
    lines = []
    for i, (first, last, pin) in enumerate(groups):
        upper = f",<{groups[i + 1][0]}" if i + 1 < len(groups) else f",<={last}"
        olds = [compat.vllm_torch_pin(v) for v in (first, last)]  # type: ignore[attr-defined]
        cudas = [o.extra for o in olds if o is not None and o.extra and Version(o.value) == pin]
        cuda = f', cuda: "{cudas[0]}"' if cudas else ""
        source = f"PyPI Requires-Dist of vllm {first}..{last} (scripts/refresh_compat.py {today})"
        lines.append(f'  - {{vllm: ">={first}{upper}", torch: "{pin}"{cuda}, source: "{source}"}}')
    return lines


def rewrite_vllm_block(text: str, rows: list[str], since: Version) -> str:
    """Keep rows entirely below `since`, replace the rest of the vllm_torch block."""
    lines = text.splitlines()
    start = lines.index("vllm_torch:") + 1
    end = start
    while end < len(lines) and lines[end].startswith("  - "):
        end += 1
    kept = [line for line in lines[start:end] if _row_below(line, since)]
    return "\n".join([*lines[:start], *kept, *rows, *lines[end:]]) + "\n"


def _row_below(line: str, since: Version) -> bool:
    m = re.search(r'vllm: "([^"]+)"', line)
    if not m:
        return False
    bounds = re.findall(r"(<=|<)\s*([0-9][^,\"]*)", m.group(1))
    return bool(bounds) and all(
        Version(v) < since if op == "<=" else Version(v) <= since for op, v in bounds
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="Report drift; exit 1 if any.")
    mode.add_argument("--write", action="store_true", help="Rewrite the vllm_torch rows.")
    parser.add_argument("--index-dir", type=Path, help="Answer URLs from recorded files.")
    parser.add_argument(
        "--compat", type=Path, default=COMPAT, help="compat.yaml to compare/update."
    )
    parser.add_argument(
        "--since", type=Version, default=Version("0.8.0"), help="Oldest vLLM to read."
    )
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from shop_r1_doctor.knowledge import load_compat_file

    fetch = recorded_fetch(args.index_dir) if args.index_dir else http_fetch
    compat = load_compat_file(args.compat)
    try:
        pins = vllm_torch_pins(fetch, args.since)
    except (urllib.error.URLError, OSError) as exc:
        print(f"refresh_compat: cannot read the vLLM index: {exc}", file=sys.stderr)
        return 2
    known = sum(p is not None for p in pins.values())
    print(f"vllm: {len(pins)} releases >= {args.since}, {known} with a readable torch pin")
    drift = vllm_drift(pins, compat) + flash_attn_drift(fetch, compat)
    for item in drift:
        print(item)
    if args.write:
        text = args.compat.read_text(encoding="utf-8")
        args.compat.write_text(
            rewrite_vllm_block(text, vllm_rows(pins, compat), args.since), encoding="utf-8"
        )
        load_compat_file(args.compat)  # the rewritten file must still parse
        print(f"wrote {args.compat}")
        return 0
    real = [d for d in drift if d.counts]
    print("no drift" if not real else f"{len(real)} drift item(s)")
    return 1 if real and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
