"""Which facts each check reads, and which probe writes them (static, from the source).

`python -m shop_r1_doctor.checks.inputs > docs/check-inputs.md` renders the table; a test
keeps the file equal to it and fails when a check reads a fact that no probe writes (a
check that can only fire on hand-written fixtures is a stub). Static on purpose: a
dynamic trace only sees the branches some fixture happens to reach.

What counts as a read, in a check's body and in the `_base` helpers it calls:
- `.get("key")` / `["key"]`, or a field of the typed torch section (`t.cuda`) or of a typed
  GPU record (`gpu.memory_total_bytes`, `p.used_bytes`) -> a snapshot fact, unless the key
  is knowledge (YAML) or a key the module builds itself;
- `env_value(facts, "NAME")` / `env_set(...)` -> an environment variable the env probe
  must keep;
- `facts.plan.field` -> a field of the RunPlan (mypy proves the field exists; the
  table lists what each check reads).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from shop_r1_doctor.facts import GpuFacts, GpuProcess, TorchFacts

CHECKS_DIR = Path(__file__).parent
PKG = CHECKS_DIR.parent
ENV_READERS = {"env_value", "env_set"}
# Readers whose argument names a package or an import module: the packages/imports probes
# record every distribution and every probed module, so they are not facts by key.
NAME_READERS = {"package", "installed", "version", "requires", "import_ok", "import_error"}
# ... but the field a reader returns is a fact of the package record (PackageFacts).
RECORD_READERS = {"requires": "requires", "version": "version"}
# `Facts` properties -> the snapshot key they read.
FACT_PROPERTIES = {
    "os": "os",
    "wsl": "wsl",
    "container": "container",
    "gpus": "gpus",
    "torch": "torch",
    "driver": "driver",
    "env": "env",
    "host": "host",
    "plan": "plan",
}


TORCH_FIELDS = frozenset(TorchFacts.__struct_fields__)
GPU_FIELDS = frozenset(GpuFacts.__struct_fields__ + GpuProcess.__struct_fields__)


def _is_gpu(node: ast.AST) -> bool:
    """A GPU record or one of its processes, by the names the checks give them (`gpu`,
    `g`, `p`, `gpus[0]`)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("g", "gpu", "gpus", "p")


def _is_torch(node: ast.AST) -> bool:
    """`facts.torch`, or the local names the checks give it (`t`, `torch`)."""
    if isinstance(node, ast.Name):
        return node.id in ("t", "torch")
    return isinstance(node, ast.Attribute) and node.attr == "torch"


@dataclass
class Reads:
    facts: set[str] = field(default_factory=set)
    env: set[str] = field(default_factory=set)
    plan: set[str] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)

    def merge(self, other: Reads) -> None:
        self.facts |= other.facts
        self.env |= other.env
        self.plan |= other.plan


def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def reads_of(node: ast.AST) -> Reads:
    out = Reads()
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "facts"
            and sub.attr in FACT_PROPERTIES
            and sub.attr != "plan"
        ):
            out.facts.add(FACT_PROPERTIES[sub.attr])
        if isinstance(sub, ast.Attribute) and sub.attr in TORCH_FIELDS and _is_torch(sub.value):
            out.facts.add(sub.attr)  # a field of the typed torch section
        if isinstance(sub, ast.Attribute) and sub.attr in GPU_FIELDS and _is_gpu(sub.value):
            out.facts.add(sub.attr)  # a field of a typed GPU record
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Attribute)
            and isinstance(sub.value.value, ast.Name)
            and sub.value.value.id == "facts"
            and sub.value.attr == "plan"
        ):
            out.plan.add(sub.attr)
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            out.calls.add(name)
            args = [a for a in map(_literal, sub.args) if a]
            if name in ENV_READERS:
                out.env |= set(args)
            elif name in RECORD_READERS and isinstance(func, ast.Attribute) and args:
                out.facts.add(RECORD_READERS[name])  # facts.requires("torch")
            elif name == "get" and sub.args and _literal(sub.args[0]):
                out.facts.add(_literal(sub.args[0]))  # type: ignore[arg-type]
        elif (
            isinstance(sub, ast.Subscript)
            and isinstance(sub.ctx, ast.Load)
            and not (isinstance(sub.value, ast.Name) and sub.value.id.isupper())  # a constant
            and (key := _literal(sub.slice))
        ):
            out.facts.add(key)
    return out


def built_keys(tree: ast.AST) -> set[str]:
    """Keys a module writes itself (dict literals, subscript stores): not snapshot facts."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            out |= {k for k in map(_literal, node.keys) if k}
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            out |= {k for k in [_literal(node.slice)] if k}
    return out


@functools.lru_cache(maxsize=1)
def knowledge_keys() -> frozenset[str]:
    out: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            out.update(str(k) for k in value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for path in sorted((PKG / "knowledge").glob("*.yaml")):
        walk(yaml.safe_load(path.read_text()))
    return frozenset(out)


def probe_writers(key: str, probe_dir: Path | None = None) -> list[str]:
    """Probe modules whose source (child scripts included) writes `key`: quoted, or as a
    keyword of `dict(key=...)`."""
    pattern = re.compile(rf"[\"']{re.escape(key)}[\"']|\b{re.escape(key)}=(?!=)")
    files = sorted((probe_dir or PKG / "probes").glob("*.py"))
    return [p.stem for p in files if p.stem != "__init__" and pattern.search(p.read_text())]


def _helpers() -> dict[str, Reads]:
    tree = ast.parse((CHECKS_DIR / "_base.py").read_text())
    helpers = {
        n.name: reads_of(n)
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    # helpers calling helpers (`gpu_name` -> `gpu_index`): merge until nothing changes
    changed = True
    while changed:
        changed = False
        for r in helpers.values():
            before = (len(r.facts), len(r.env), len(r.plan))
            for name in r.calls & helpers.keys():
                r.merge(helpers[name])
            changed |= before != (len(r.facts), len(r.env), len(r.plan))
    return helpers


def check_reads(path: Path) -> dict[str, Reads]:
    """Each top-level function in a check module -> what it (and `_base` helpers) read."""
    tree = ast.parse(path.read_text())
    helpers = _helpers()
    ignore = (
        knowledge_keys()
        | built_keys(tree)
        | built_keys(ast.parse((CHECKS_DIR / "_base.py").read_text()))
    )
    out: dict[str, Reads] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        r = reads_of(node)
        for name in r.calls & helpers.keys():
            r.merge(helpers[name])
        r.facts -= ignore
        out[node.name] = r
    return out


def check_modules() -> list[Path]:
    skip = {"__init__.py", "_base.py", "docs.py", "inputs.py"}
    return [p for p in sorted(CHECKS_DIR.glob("*.py")) if p.name not in skip]


def render_markdown() -> str:
    from shop_r1_doctor.checks import REGISTRY

    registered = {(c.__module__.rsplit(".", 1)[-1], c.__name__) for c in REGISTRY}
    lines = [
        "# What each check reads, and the probe that writes it",
        "",
        "Generated by `python -m shop_r1_doctor.checks.inputs > docs/check-inputs.md` from the",
        "checks' source (helpers in `checks/_base.py` included); a test keeps it current and",
        "fails when a check reads a fact that no probe writes. Every check also reads the plan",
        "fields listed (a `--plan` file, or the run plan `shop-r1 train` builds).",
        "",
        "| check | facts (probe) | env vars (probes/env.py) | plan fields |",
        "|---|---|---|---|",
    ]
    for path in check_modules():
        for name, r in check_reads(path).items():
            if (path.stem, name) not in registered:
                continue
            facts = ", ".join(
                f"`{k}` ({'/'.join(probe_writers(k)) or 'NO PROBE'})" for k in sorted(r.facts)
            )
            env = ", ".join(f"`{k}`" for k in sorted(r.env))
            plan = ", ".join(f"`{k}`" for k in sorted(r.plan))
            lines.append(f"| `{path.stem}.{name}` | {facts} | {env} | {plan} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render_markdown(), end="")
