"""Package listings: `pip list`, `pip freeze`, `conda list` and `conda list --export`.

Only what is listed is recorded. A listing never says what is absent: a paste is often
cut short or filtered (`pip list | grep torch`), so a package missing from it is unknown.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from shop_r1_doctor.ingest._common import Line, Partial

_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_FREEZE = re.compile(rf"^(?P<name>{_NAME})(?:\[[^\]]*\])?\s*==\s*(?P<version>[^\s;#]+)\s*$")
_DIRECT = re.compile(rf"^(?P<name>{_NAME}) @ (?:file|https?|git\+\w+)://\S+$")
_PIP_HEADER = re.compile(r"^Package\s+Version(\s+.*)?$")
_RULE = re.compile(r"^-{3,}(\s+-{3,})+$")
_CONDA_HEADER = re.compile(r"^#\s*Name\s+Version\s+Build(\s+Channel)?\s*$")
_CONDA_EXPORT = re.compile(rf"^(?P<name>{_NAME})=(?P<version>[^=\s]+)=(?P<build>\S+)$")
_ROW = re.compile(rf"^(?P<name>{_NAME})\s+(?P<version>\d[^\s]*)(?:\s+(?P<rest>.*))?$")
_CONDA_NAMES = {"pytorch": "torch"}
# A conda build string (`pypi_0`, `py312h2bbff1b_0`, `h5eee18b_6`, `0`): rows that carry
# one are conda's even when the `# Name Version Build` header was not pasted.
_CONDA_BUILD = re.compile(r"^(?:pypi_0|<pip>|py\w+|h[0-9a-f]{7}_\d+|[0-9a-z_]*_\d+|\d+)$")
HEADLESS_CONDA_ROWS = 3  # this many such rows in a paste make it a conda listing
# `pip list` rows without the `Package Version` header: exactly two columns, the second a
# version, aligned by two or more spaces.
_PIP_ROW = re.compile(rf"^(?P<name>{_NAME})\s{{2,}}(?P<version>\d[^\s]*)$")
HEADLESS_PIP_ROWS = 5
# A filtered excerpt (`pip list | grep torch`) is short and its longest name is followed by
# one space only: such rows are read where a block (lines between blank lines or markdown
# fences, so a second fenced block of an issue is its own block) holds nothing else, with
# two rows or more, or one row under the pip/conda command that printed it.
_LOOSE_ROW = re.compile(rf"^(?P<name>{_NAME})\s+(?P<version>\d[^\s]*)$")
_LIST_CMD = re.compile(
    r"(?:^|[\s$#>`])(?:python3?(?:\.\d+)? -m )?(?:uv )?(?:pip3?|conda) (?:list|freeze)\b"
)


def parse(lines: list[Line], where: str) -> Partial | None:
    out = Partial("pip_list")
    mode: str | None = None  # "pip" after a `pip list` header, "conda" after conda's
    if _headless_conda(lines):
        mode = "conda"
    elif sum(bool(_PIP_ROW.match(ln.text.strip())) for ln in lines) >= HEADLESS_PIP_ROWS:
        mode = "pip-rows-headless"
    loose = _row_blocks(lines)
    for line in lines:
        text = line.text.strip()
        if not text:
            mode = None if mode == "pip-rows" else mode
            continue
        if line.number in loose:
            row = _LOOSE_ROW.match(text)
            assert row is not None  # _row_blocks kept only such lines
            out.package(row.group("name"), row.group("version"), line.number)
            continue
        if _PIP_HEADER.match(text):
            mode = "pip"
            continue
        if _CONDA_HEADER.match(text) or text.startswith("# packages in environment at"):
            mode = "conda"
            continue
        if _RULE.match(text) and mode == "pip":
            mode = "pip-rows"
            continue
        freeze = _FREEZE.match(text)
        if freeze:
            out.package(freeze.group("name"), freeze.group("version"), line.number)
            continue
        export = _CONDA_EXPORT.match(text)
        if export:
            _conda(out, export.group("name"), export.group("version"), export.group("build"), line)
            continue
        direct = _DIRECT.match(text)
        if direct:
            out.package(direct.group("name"), None, line.number)  # a wheel or checkout: no version
            continue
        if mode == "pip-rows-headless":
            pip_row = _PIP_ROW.match(text)
            if pip_row:
                out.package(pip_row.group("name"), pip_row.group("version"), line.number)
            continue
        row = _ROW.match(text) if mode in ("pip-rows", "conda") else None
        if row:
            if mode == "conda":
                _conda(out, row.group("name"), row.group("version"), row.group("rest") or "", line)
            else:
                out.package(row.group("name"), row.group("version"), line.number)
            continue
        if mode == "pip-rows":
            mode = None  # the table ended: prose after it is not a package
    return out if out.lines else None


def _row_blocks(lines: list[Line]) -> set[int]:
    """Line numbers of `name version` rows standing in a block of their own."""
    out: set[int] = set()
    block: list[Line] = []
    before = ""  # the last non-blank line ahead of the block (a command, "my pip list:")
    for line in [*lines, Line(0, "")]:
        if line.text.strip():
            block.append(line)
            continue
        if block:
            head = block[0].text.strip()
            cmd = bool(_LIST_CMD.search(head))
            rows = block[1:] if cmd else block
            under_cmd = cmd or bool(_LIST_CMD.search(before))
            alone = rows and all(_is_row(r.text.strip()) for r in rows)
            if alone and (len(rows) >= 2 or under_cmd):
                out.update(r.number for r in rows)
            before = block[-1].text.strip()
        block = []
    return out


def _is_row(text: str) -> bool:
    row = _LOOSE_ROW.match(text)
    if row is None:
        return False
    try:
        Version(row.group("version"))
    except InvalidVersion:
        return False
    return True


def _conda(out: Partial, name: str, version: str, rest: str, line: Line) -> None:
    # conda's `pytorch` is torch; a build string such as `py3.10_cuda12.1_cudnn8.9.2_0`
    # says which CUDA, but the version itself has no `+cu121`: the variant stays unknown.
    name = _CONDA_NAMES.get(name, name)
    if name not in out.facts.get("packages", {}) or "pypi" in rest:
        out.package(name, version, line.number)


def _headless_conda(lines: list[Line]) -> bool:
    rows = 0
    for line in lines:
        row = _ROW.match(line.text.strip())
        rest = (row.group("rest") or "").split() if row else []
        rows += bool(rest and _CONDA_BUILD.match(rest[0]))
    return rows >= HEADLESS_CONDA_ROWS
