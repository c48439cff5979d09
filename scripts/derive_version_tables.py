"""Derive two version tables of the stack from its wheels, read without installing them.

`exports`: the names a package's top level exports in EVERY given release (the
intersection), i.e. the names `from <package> import <name>` cannot fail on in any of
them. An import failure of such a name from the package means the module imported was
another one of that name (a file or folder shadowing it), not another release; a name
outside the intersection appeared or disappeared between releases (a skew reading).

`trainer-attrs`: the attributes a trainer class sets in its own `__init__`
(`self.<attr> = ...`) in some of the given releases and not in others. A subclass written
for one release that runs the base class of another meets them: `'<X>Trainer' object has
no attribute '<attr>'`.

    pip download --no-deps -d wheels datasets==2.14.0 datasets==3.0.0 datasets==5.2.0 ...
    python scripts/derive_version_tables.py exports wheels/datasets-*.whl --names load_dataset Dataset ...
    python scripts/derive_version_tables.py trainer-attrs wheels/trl-*.whl wheels/transformers-*.whl

The tables in shop_r1_doctor/knowledge/log_signatures.yaml are this script's output
(`exports` checked for the names users import; `trainer-attrs` whole), with the wheels
cited beside them.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath

# trainer class -> the module that defines it, per package (the trainers RL/SFT stacks subclass)
TRAINERS = {
    "trl": {
        "GRPOTrainer": "trl/trainer/grpo_trainer.py",
        "SFTTrainer": "trl/trainer/sft_trainer.py",
        "DPOTrainer": "trl/trainer/dpo_trainer.py",
        "PPOTrainer": "trl/trainer/ppo_trainer.py",
        "RLOOTrainer": "trl/trainer/rloo_trainer.py",
    },
    "transformers": {"Trainer": "transformers/trainer.py"},
}


def _wheel_version(path: str) -> tuple[str, str]:
    name, version = PurePosixPath(path).name.split("-")[:2]
    return name, version


class Wheel:
    def __init__(self, path: str) -> None:
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.files = set(self.zip.namelist())

    def tree(self, file: str) -> ast.Module | None:
        if file not in self.files:
            return None
        return ast.parse(self.zip.read(file).decode("utf-8"), file)

    def module_file(self, dotted: str) -> str | None:
        base = dotted.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.files:
                return cand
        return None


def _literal_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(v) for v in value]
    return None


def _resolve(package: str, level: int, module: str | None) -> str:
    parts = package.split(".")
    base = parts[: len(parts) - level + 1] if level else []
    return ".".join([*base, *(module.split(".") if module else [])])


def exported_names(wheel: Wheel, dotted: str, seen: set[str] | None = None) -> set[str]:
    """Names the module exports: its literal `__all__`, else every name its own imports
    bind (TYPE_CHECKING blocks included), the strings of its lazy `_import_structure`
    lists, and, for `from .x import *`, what x exports (followed recursively)."""
    seen = set() if seen is None else seen
    file = wheel.module_file(dotted)
    if file is None or file in seen:
        return set()
    seen.add(file)
    tree = wheel.tree(file)
    assert tree is not None
    declared = _literal_all(tree)
    if declared is not None:
        return set(declared)
    package = dotted if file.endswith("__init__.py") else dotted.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            for alias in node.names:
                if alias.name == "*":
                    target = _resolve(package, node.level, node.module)
                    names |= exported_names(wheel, target, seen)
                else:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.List) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
        ):
            names |= {str(e.value) for e in node.elts if isinstance(e, ast.Constant)}
    return {n for n in names if re.fullmatch(r"[A-Za-z]\w*", n)}


def _init_attrs(tree: ast.Module, cls: str, method: str | None = "__init__") -> set[str] | None:
    """The attributes `cls.<method>` sets on self (any method when `method` is None);
    None when the module has no such class."""
    found: set[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            found = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and method in (None, item.name):
                    attrs: set[str] = set()
                    for sub in ast.walk(item):
                        targets: Iterable[ast.expr] = ()
                        if isinstance(sub, ast.Assign):
                            targets = sub.targets
                        elif isinstance(sub, ast.AnnAssign):
                            targets = [sub.target]
                        for t in targets:
                            for el in t.elts if isinstance(t, ast.Tuple) else [t]:
                                if (
                                    isinstance(el, ast.Attribute)
                                    and isinstance(el.value, ast.Name)
                                    and el.value.id == "self"
                                ):
                                    attrs.add(el.attr)
                    found |= attrs
    return found


def cmd_exports(wheels: list[str], names: list[str]) -> int:
    by_version = {}
    for path in wheels:
        pkg, version = _wheel_version(path)
        by_version[version] = exported_names(Wheel(path), pkg)
    every = list(by_version.values())
    common = every[0].intersection(*every[1:])
    print(f"# {pkg}: {len(common)} names in all of {', '.join(by_version)}")
    for name in names:
        missing = [v for v, got in by_version.items() if name not in got]
        print(f"{name}: {'in all' if not missing else 'NOT in ' + ', '.join(missing)}")
    return 0


def _class_attrs(
    wheels: list[str], pkg: str, cls: str, file: str, method: str | None = "__init__"
) -> dict[str, set[str]]:
    """Release -> the attributes `cls.<method>` sets, for the releases that have `cls`."""
    sets: dict[str, set[str]] = {}
    for path in wheels:
        if _wheel_version(path)[0] != pkg:
            continue
        tree = Wheel(path).tree(file)
        attrs = _init_attrs(tree, cls, method) if tree is not None else None
        if attrs is not None:
            sets[_wheel_version(path)[1]] = attrs
    return sets


def cmd_trainer_attrs(wheels: list[str]) -> int:
    for path in wheels:
        pkg, _ = _wheel_version(path)
        if pkg not in TRAINERS:
            sys.exit(f"{path}: no trainers known for {pkg}")
    # what transformers' Trainer sets (in any of its methods) in every given release is
    # there whichever release runs (a TRL trainer that once set it itself and now leaves it
    # to the base class still has it): not a sign of skew
    base = _class_attrs(
        wheels, "transformers", "Trainer", TRAINERS["transformers"]["Trainer"], method=None
    )
    bases = list(base.values())
    always = bases[0].intersection(*bases[1:]) if bases else set()
    table: set[str] = set()
    for pkg, classes in TRAINERS.items():
        paths = [p for p in wheels if _wheel_version(p)[0] == pkg]
        for cls, file in classes.items():
            sets = _class_attrs(paths, pkg, cls, file)
            if len(sets) < 2:
                continue
            every = list(sets.values())
            varying = set().union(*every) - every[0].intersection(*every[1:]) - always
            table |= varying
            print(f"# {pkg} {cls} ({', '.join(sets)}): {len(varying)} attributes set in some")
            for attr in sorted(varying):
                print(f"  {attr}: {', '.join(v for v, s in sets.items() if attr in s)}")
    print(f"# table ({len(table)}): {'|'.join(sorted(table))}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("exports", help="names exported by every given release of one package")
    ex.add_argument("wheels", nargs="+")
    ex.add_argument("--names", nargs="+", required=True, help="the names to check")
    ta = sub.add_parser("trainer-attrs", help="trainer attributes set in some releases only")
    ta.add_argument("wheels", nargs="+")
    args = parser.parse_args(argv)
    if args.cmd == "exports":
        return cmd_exports(args.wheels, args.names)
    return cmd_trainer_attrs(args.wheels)


if __name__ == "__main__":
    raise SystemExit(main())
