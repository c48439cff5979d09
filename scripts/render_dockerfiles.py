"""Regenerate dockerfiles/<profile>/ for every shipped profile (CI fails on drift).

Usage: python scripts/render_dockerfiles.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shop_r1_doctor.dockerfile import render, write
from shop_r1_doctor.profiles.model import load_profiles

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "dockerfiles"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="Report drift; write nothing.")
    args = parser.parse_args(argv)
    drift = []
    for name, profile in sorted(load_profiles().items()):
        rendered = render(profile)
        target = OUT / name
        stale = [p for p in target.glob("*") if p.name not in rendered.files()]
        if args.check:
            drift += [str(p.relative_to(ROOT)) for p in stale]
            for file, text in rendered.files().items():
                path = target / file
                if not path.is_file() or path.read_text(encoding="utf-8") != text:
                    drift.append(str(path.relative_to(ROOT)))
        else:
            for path in stale:
                path.unlink()
                print(f"removed {path.relative_to(ROOT)}")
            for path in write(rendered, target):
                print(f"wrote {path.relative_to(ROOT)}")
    for path in drift:
        print(f"drift: {path} (run python scripts/render_dockerfiles.py)")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
