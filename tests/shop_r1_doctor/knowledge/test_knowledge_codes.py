"""Every finding is built from its catalog entry, and every emitted code is catalogued.

Static: the sources of both packages are read, not run, so a code emitted on a path no
test reaches is held to the catalog too.
"""

from __future__ import annotations

import re
from pathlib import Path

from repo_paths import ROOT

from shop_r1_doctor.knowledge import load_codes

SOURCES = sorted(p for pkg in ("shop_r1", "shop_r1_doctor") for p in (ROOT / pkg).rglob("*.py"))
# building a Finding by hand is allowed only in the helper and when reading a saved report
BUILDERS = {"shop_r1_doctor/catalog.py", "shop_r1_doctor/diagnose.py"}
CALL = re.compile(r"\bfinding\(\s*\"([A-Z][A-Z0-9_]+)\"")
CONST = re.compile(r"^\s*[A-Z_]*CODE[A-Z_]*\s*=\s*\"([A-Z][A-Z0-9_]+)\"", re.MULTILINE)
SIGNATURE = re.compile(r"^\s*(?:code|also):\s*\[?([A-Z][A-Z0-9_, ]+)\]?\s*$", re.MULTILINE)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def emitted_codes() -> dict[str, str]:
    out: dict[str, str] = {}
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for code in CALL.findall(text) + CONST.findall(text):
            out.setdefault(code, _rel(path))
    signatures = ROOT / "shop_r1_doctor/knowledge/log_signatures.yaml"
    for group in SIGNATURE.findall(signatures.read_text(encoding="utf-8")):
        for code in re.split(r"[,\s]+", group.strip()):
            if code:
                out.setdefault(code, _rel(signatures))
    return out


def test_no_finding_is_built_by_hand():
    by_hand = [
        f"{_rel(p)}:{n}"
        for p in SOURCES
        if _rel(p) not in BUILDERS
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bFinding\(", line) and not line.lstrip().startswith(("def ", "class "))
    ]
    assert by_hand == [], "build findings with shop_r1_doctor.catalog.finding / api.finding"


def test_every_emitted_code_is_in_the_catalog_and_the_docs():
    emitted = emitted_codes()
    assert len(emitted) > 50  # the scan sees the checks (a broken regex finds nothing)
    catalog = load_codes()
    docs = (ROOT / "docs/checks.md").read_text(encoding="utf-8")
    missing = {c: where for c, where in emitted.items() if c not in catalog}
    undocumented = {c: where for c, where in emitted.items() if f"`{c}`" not in docs}
    assert missing == {} and undocumented == {}
