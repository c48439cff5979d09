"""Golden files of the doctor's tests; compare them with the `golden` fixture
(tests/conftest.py), rewrite them only with `pytest --update-goldens`.

`finding_blocks` cuts the finding blocks (shop_r1_doctor/render/findings.py) out of a
command's output, so a test compares their wording with a golden file and asserts the
codes and severities themselves."""

from __future__ import annotations

import re

from repo_paths import GOLDEN

__all__ = ["GOLDEN", "SEVERITY_OF_MARK", "finding_blocks"]

# the renderer's marks, Unicode and ASCII (render/findings.py: UNICODE, ASCII)
SEVERITY_OF_MARK = {"✗": "error", "x": "error", "!": "warning", "•": "info", "-": "info"}
_HEAD = re.compile(r"^(?P<indent> *)(?P<mark>[✗x!•-]) .* \[(?P<code>[A-Z0-9_]+)\](?: \(.*\))?$")


def finding_blocks(text: str) -> list[tuple[str, str, str]]:
    """(severity, code, the block's text, unindented) for each finding block in `text`."""
    blocks: list[tuple[str, str, list[str]]] = []
    indent = None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head:
            indent = len(head["indent"])
            blocks.append((SEVERITY_OF_MARK[head["mark"]], head["code"], [line[indent:]]))
        elif indent is not None and line.startswith(" " * (indent + 2)):
            blocks[-1][2].append(line[indent:])
        else:
            indent = None
    return [(sev, code, "\n".join(lines) + "\n") for sev, code, lines in blocks]
