"""Render docs/checks.md from the code list (`python -m shop_r1_doctor.checks.docs`).

A test keeps the committed file equal to this output, so the docs cannot drift.
"""

from __future__ import annotations

from shop_r1_doctor.knowledge import load_codes

HEADER = """# Doctor checks

Every finding code `shop-r1 doctor` can emit, generated from
`shop_r1_doctor/knowledge/codes.yaml` by `python -m shop_r1_doctor.checks.docs > docs/checks.md`.
Severity is the default: `error` = training will fail or silently produce garbage,
`warning` = slower, fragile, or fails under some settings, `info` = worth knowing.
Some rules lower or raise it with the plan (e.g. a broken flash-attn is an error only
when the plan asks for `flash_attention_2`); the detail of each finding says why.
Compatibility facts come from `shop_r1_doctor/knowledge/compat.yaml` (each entry names
its source); facts read from the machine (an installed dist's `Requires-Dist`,
`torch.cuda.get_arch_list()`) win over the tables.

Log-only codes cannot be seen in a snapshot; the log-signature scanner reports them.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown() -> str:
    codes = load_codes()
    lines = [HEADER]
    for title, log_only in (("Snapshot checks", False), ("Log-only", True)):
        lines += [
            f"## {title}",
            "",
            "| code | severity | subject | triggers when | fix | sources |",
            "|---|---|---|---|---|---|",
        ]
        for info in sorted(codes.values(), key=lambda i: (i.subject, i.code)):
            if info.log_only != log_only:
                continue
            urls = " ".join(f"<{u}>" for u in info.urls)
            trigger = info.trigger + (
                f". Root cause of {', '.join(f'`{c}`' for c in info.explains)}: when both "
                "are found, those follow from this one and leave the summary"
                if info.explains
                else ""
            )
            lines.append(
                f"| `{info.code}` | {info.severity} | {info.subject} | {_cell(trigger)} "
                f"| {_cell(info.fix)} | {urls} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_markdown(), end="")
