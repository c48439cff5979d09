"""List the messages the training stack itself prints whose cause is the environment.

For each package: the Python sources (of the installed package, or of a wheel/sdist read
without installing it) are walked with `ast` for the message of every `raise X("...")`,
`warnings.warn("...")` and `logger.warning/error/critical/fatal/exception("...")`
(f-strings, `%` and `.format` placeholders become `.*?` in the regex, `{}` in the text;
a message held in a variable first, `msg = "..."; raise X(msg)`, is followed within the
function). C++/CUDA sources in an sdist give their `TORCH_CHECK(cond, "...")` texts;
compiled libraries (.so) give their printable strings that read as a sentence (torch's
TORCH_CHECK texts in libtorch_cpu/libc10, NCCL's `NCCL WARN` formats in libnccl), with
printf formats as placeholders and the byte offset instead of a line.

Only messages of the environment-caused families are kept: the keyword lists in
shop_r1_doctor/knowledge/message_families.yaml (data, not code).

Output, one file per package and version, sorted, one JSON object a line:
  shop_r1_doctor/knowledge/framework_messages/<package>-<version>.jsonl
  {"text", "file", "line" (or "offset" for a binary), "kind", "families"}
`text` holds `{}` for each placeholder; its regex (shop_r1_doctor/framework_messages.py)
is the escaped text with `.*?` there (kept out of the file: it doubles the size).

    python scripts/extract_messages.py [--installed PKG ...] [--archive PATH ...] [--out DIR]
    python scripts/extract_messages.py --citations   # sourced / outside / unmatched signatures

Without arguments: the installed packages of STACK; `--archive` adds wheels or sdists
(`pip download --no-deps PKG==VERSION`), named by the archive's file name. The layers
above the core stack (peft, unsloth, unsloth_zoo, llamafactory, verl) are read from their
wheels this way; a wheel's folders that hold another program are skipped (ARCHIVE_SKIP).
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import io
import json
import mmap
import re
import sys
import tarfile
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "shop_r1_doctor" / "knowledge"
OUT = KNOWLEDGE / "framework_messages"
FAMILIES = KNOWLEDGE / "message_families.yaml"

# Installed distribution -> its import packages (directories under site-packages).
STACK = {
    "torch": ("torch",),
    "transformers": ("transformers",),
    "trl": ("trl",),
    "accelerate": ("accelerate",),
    "datasets": ("datasets",),
    "huggingface_hub": ("huggingface_hub",),
    "safetensors": ("safetensors",),
    "ray": ("ray",),
    "numpy": ("numpy",),
}
# Compiled libraries worth reading, by file name (others are kernels or bindings whose
# strings are symbol names, not messages); Ray's raylet and GCS are executables.
# Not libtriton.so: it embeds LLVM, whose tens of
# thousands of option descriptions read as sentences; Triton's own environment messages
# are raised from its Python sources, which are read.
LIBRARIES = re.compile(
    r"(?:^|/)(?:libc10\.so|libtorch_cpu\.so|libtorch_cuda\.so|libc10_cuda\.so|libtorch_python\.so"
    r"|libnccl\.so[.\d]*|_C\.abi3\.so|cumem_allocator\.abi3\.so|_multiarray_umath[^/]*\.so"
    r"|flash_attn_2_cuda[^/]*\.so|ray/raylet/raylet|ray/gcs/gcs_server)$"
)
# Top-level folders of a wheel that are another program shipped alongside the library:
# unsloth's wheel carries Unsloth Studio, a web app whose ~900 messages answer its own UI
# (routes, auth, a llama.cpp server it downloads), not a training run that imports unsloth.
ARCHIVE_SKIP = {"unsloth": ("studio/",)}
LOG_METHODS = {"warning", "warn", "error", "critical", "fatal", "exception", "warning_once"}
MIN_LITERAL = 12  # characters of fixed text a message needs to be told apart
PLACEHOLDER = "{}"
_PRINTF = re.compile(
    r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L|q)?[diouxXeEfgGcspn]"
)
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
_SENTENCE = re.compile(rb"[\x20-\x7e\t\n]{20,}")
_TORCH_CHECK = re.compile(
    r"\b(?:TORCH_CHECK(?:_\w+)?|AT_ERROR|TORCH_WARN(?:_ONCE)?|C10_THROW_ERROR)\s*\((?P<args>[^;]{0,2000}?)\)\s*;"
)
_ERROR_WORDS = re.compile(
    r"(?i)\b(?:error|fail\w*|cannot|can't|could not|couldn't|unable|invalid|not (?:supported|"
    r"found|available|compiled|enabled|compatible|enough)|unsupported|insufficient|too (?:old|"
    r"small|large)|mismatch\w*|expected|must|WARN|out of memory|exceed\w*|no \w+ (?:found|"
    r"available)|timed? ?out|refused|duplicate|abort\w*|denied|nan)\b"
)
_C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


@dataclass(frozen=True)
class Message:
    parts: tuple[str | None, ...]  # literal text, None for a placeholder
    file: str
    line: int | None
    kind: str
    offset: int | None = None

    @property
    def text(self) -> str:
        return "".join(PLACEHOLDER if p is None else p for p in self.parts)

    @property
    def literal(self) -> int:
        return sum(len(p) for p in self.parts if p is not None)


def load_families(path: Path = FAMILIES) -> dict[str, list[re.Pattern[str]]]:
    data = yaml.safe_load(path.read_text())
    return {
        name: [re.compile(k, re.IGNORECASE) for k in keys]
        for name, keys in data["families"].items()
    }


# --- Python sources ---------------------------------------------------------------------


def _split_format(s: str, pattern: re.Pattern[str]) -> list[str | None]:
    out: list[str | None] = []
    pos = 0
    for m in pattern.finditer(s):
        if m.group(0) in ("{{", "}}", "%%"):
            continue
        out += [s[pos : m.start()], None]
        pos = m.end()
    out.append(s[pos:])
    return [p for p in out if p != ""]


def _parts(
    node: ast.AST, names: dict[str, list[ast.AST]], depth: int = 0
) -> list[str | None] | None:
    """The message an expression builds: literal pieces and placeholders; None when the
    expression holds no literal text at all."""
    if depth > 6:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list[str | None] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            elif (
                isinstance(v, ast.FormattedValue)
                and isinstance(v.value, ast.Name)
                and v.format_spec is None
                and v.value.id in names
                and len({ast.dump(a) for a in names[v.value.id]}) == 1
            ):  # f"{preface} {msg}" with preface = "...": the text it holds (a name given
                # several values is split into one message per value by _name_choices)
                out += _parts(names[v.value.id][-1], names, depth + 1) or [None]
            else:
                out.append(None)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _parts(node.left, names, depth + 1) or [None]
        right = _parts(node.right, names, depth + 1) or [None]
        return None if left == [None] and right == [None] else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        inner = _parts(node.left, names, depth + 1)
        if inner is None:
            return None
        out = []
        for p in inner:
            out += [None] if p is None else _split_format(p, re.compile(r"%%|" + _PRINTF.pattern))
        return out
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        inner = _parts(node.func.value, names, depth + 1)
        if inner is None:
            return None
        out = []
        for p in inner:
            out += [None] if p is None else _split_format(p, re.compile(r"\{\{|\}\}|\{[^{}]*\}"))
        return out
    if (
        isinstance(node, ast.Call)
        and _call_name(node.func).rsplit(".", 1)[-1] in ("dedent", "strip", "rstrip", "lstrip")
        and (node.args or isinstance(node.func, ast.Attribute))
    ):  # textwrap.dedent(f"""..."""), "...".strip(): the text is the same to a log reader
        inner = node.args[0] if node.args else node.func.value  # type: ignore[attr-defined]
        return _parts(inner, names, depth + 1)
    if isinstance(node, ast.Name) and node.id in names:
        return _parts(names[node.id][-1], names, depth + 1)
    return None


def _name_choices(
    node: ast.AST, names: dict[str, list[ast.AST]], limit: int = 8
) -> list[dict[str, list[ast.AST]]]:
    """One `names` per value of each name an f-string formats in that was given several
    literal strings (bitsandbytes' BNB_BACKEND = "CPU" / "CUDA" / "XPU"): each branch's
    message is one the program prints. A name built up otherwise (`+=` in a loop), or past
    `limit` combinations, stays a placeholder."""
    multi = sorted(
        {
            v.value.id
            for v in ast.walk(node)
            if isinstance(v, ast.FormattedValue)
            and isinstance(v.value, ast.Name)
            and len({ast.dump(a) for a in names.get(v.value.id, [])}) > 1
            and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in names[v.value.id]
            )
        }
    )
    choices = [names]
    for name in multi:
        distinct = list({ast.dump(a): a for a in names[name]}.values())
        choices = [{**c, name: [a]} for c in choices for a in distinct]
        if len(choices) > limit:
            return [names]
    return choices


def _call_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return f"{_call_name(func.value)}.{func.attr}"
    return "?"


def _message_arg(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    for kw in call.keywords:
        if kw.arg in ("msg", "message"):
            return kw.value
    return None


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a module or function, not of the functions defined inside it."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))


def python_messages(source: str, file: str) -> Iterator[Message]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return
    scopes: list[ast.AST] = [tree] + [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    seen: set[tuple[int, int]] = set()
    module_names: dict[str, list[ast.AST]] = {}
    for scope in scopes:
        # every value a name is given in the scope (branches set a message each way), on
        # top of the module's constants (torch's CUDA_MISMATCH_MESSAGE)
        names = {k: list(v) for k, v in module_names.items()}
        if scope is tree:
            names = module_names
        # Walk in source order, so `msg = ...` is known before the raise that uses it.
        nodes = sorted(
            (n for n in _own_nodes(scope) if hasattr(n, "lineno")),
            key=lambda n: (n.lineno, n.col_offset),
        )
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    names.setdefault(target.id, []).append(node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                prev = names.get(node.target.id)
                if prev and isinstance(node.op, ast.Add):
                    joined = ast.BinOp(left=prev[-1], op=ast.Add(), right=node.value)
                    prev.append(ast.copy_location(joined, node))
            call: ast.Call | None = None
            kind = ""
            if isinstance(node, ast.Assert) and node.msg is not None:
                # vLLM states environment limits as asserts ("Expandable segments ...")
                call = ast.Call(func=ast.Name(id="assert"), args=[node.msg], keywords=[])
                kind = "assert"
            elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call, kind = node.exc, f"raise {_call_name(node.exc.func)}"
            elif isinstance(node, ast.Call) and _call_name(node.func) == "?.__init__":
                # an exception class that fixes its own message (torch's TritonMissing)
                call, kind = node, "exception message"
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
                name = _call_name(node.func)
                attr = name.rsplit(".", 1)[-1]
                if attr in ("warn", "warn_explicit") and "log" not in name.lower():
                    call, kind = node, "warn"
                elif attr in LOG_METHODS and "log" in name.lower():
                    call, kind = node, f"log {attr}"
                elif name == "sys.stderr.write":
                    call, kind = node, "stderr"
                elif name == "print" and file.endswith("setup.py"):
                    # a build's messages (flash-attn's "Precompiled wheel not found")
                    call, kind = node, "print"
            if call is None:
                continue
            arg = _message_arg(call)
            if arg is None:
                continue
            key = (node.lineno, node.col_offset)
            if key in seen:
                continue
            seen.add(key)
            values = names[arg.id] if isinstance(arg, ast.Name) and arg.id in names else [arg]
            for value in values:
                for choice in _name_choices(value, names):
                    parts = _parts(value, choice)
                    if parts:
                        line = getattr(value, "lineno", node.lineno)
                        yield Message(tuple(parts), file, line, kind)


# --- C++ sources and compiled libraries -------------------------------------------------


def cpp_messages(source: str, file: str) -> Iterator[Message]:
    for m in _TORCH_CHECK.finditer(source):
        strings = _C_STRING.findall(m.group("args"))
        if not strings:
            continue
        text = "".join(bytes(s, "utf-8").decode("unicode_escape", "replace") for s in strings)
        line = source.count("\n", 0, m.start()) + 1
        kind = m.group(0).split("(", 1)[0].strip()
        yield Message(
            tuple(_split_format(text, re.compile(r"%%|" + _PRINTF.pattern))), file, line, kind
        )


def binary_messages(data: bytes | mmap.mmap, file: str) -> Iterator[Message]:
    for m in _SENTENCE.finditer(data):
        raw = m.group(0).decode("ascii", "replace")
        for piece in raw.split("\n"):
            piece = piece.strip()
            if len(piece) < 20 or len(piece.split()) < 4:
                continue
            if sum(c.isalpha() for c in piece) < 0.6 * len(piece):
                continue  # mangled symbols, tables, paths
            if not _ERROR_WORDS.search(piece):
                continue  # help texts and descriptions, not something printed on failure
            parts = _split_format(piece, re.compile(r"%%|" + _PRINTF.pattern))
            yield Message(tuple(parts), file, None, "binary string", offset=m.start())


# --- walking a package ------------------------------------------------------------------


def keep(msg: Message, families: dict[str, list[re.Pattern[str]]]) -> list[str]:
    if msg.literal < MIN_LITERAL:
        return []
    text = msg.text
    return [name for name, keys in families.items() if any(k.search(text) for k in keys)]


def from_files(files: Iterable[tuple[str, bytes | mmap.mmap]]) -> Iterator[Message]:
    for name, data in files:
        if name.endswith(".py"):
            yield from python_messages(bytes(data).decode("utf-8", "replace"), name)
        elif name.endswith((".cpp", ".cu", ".h", ".cuh", ".hpp")):
            yield from cpp_messages(bytes(data).decode("utf-8", "replace"), name)
        elif LIBRARIES.search(name):
            yield from binary_messages(data, name)


def installed_files(dist: str) -> tuple[str, Iterator[tuple[str, bytes | mmap.mmap]]]:
    d = importlib.metadata.distribution(dist)
    base = Path(str(d.locate_file("")))
    tops = STACK.get(dist, (dist,))

    def walk() -> Iterator[tuple[str, bytes | mmap.mmap]]:
        for top in tops:
            for path in sorted((base / top).rglob("*")):
                rel = path.relative_to(base).as_posix()
                if not path.is_file() or "/tests/" in f"/{rel}" or "/test/" in f"/{rel}":
                    continue
                if rel.endswith(".py"):
                    yield rel, path.read_bytes()
                elif LIBRARIES.search(rel):
                    with (
                        path.open("rb") as fh,
                        mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm,
                    ):
                        yield rel, mm

    return d.version, walk()


_ARCHIVE_NAME = re.compile(
    r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>\d[^-]*?)(?:-|\.tar\.gz$|\.zip$)"
)


def archive_files(path: Path) -> tuple[str, str, Iterator[tuple[str, bytes | mmap.mmap]]]:
    m = _ARCHIVE_NAME.match(path.name)
    if not m:
        raise SystemExit(f"{path}: not a wheel or sdist name (NAME-VERSION-...)")
    name = m.group("name").lower().replace("-", "_").replace(".", "_")
    wanted = re.compile(r"\.(?:py|cpp|cu|h|cuh|hpp)$")
    skip = ARCHIVE_SKIP.get(name, ())

    def walk() -> Iterator[tuple[str, bytes | mmap.mmap]]:
        if path.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(path) as zf:
                for info in sorted(zf.infolist(), key=lambda i: i.filename):
                    n = info.filename
                    if "/tests/" in f"/{n}" or not (wanted.search(n) or LIBRARIES.search(n)):
                        continue
                    if n.startswith(skip):
                        continue
                    if n.endswith((".cpp", ".cu", ".h", ".cuh", ".hpp")):
                        continue  # headers shipped in a wheel are third-party (cutlass, ...)
                    yield n, zf.read(info)
        else:
            with tarfile.open(path) as tf:
                for member in sorted(tf.getmembers(), key=lambda i: i.name):
                    n = member.name.split("/", 1)[-1]  # drop NAME-VERSION/
                    if not member.isfile() or "/tests/" in f"/{n}" or not wanted.search(n):
                        continue
                    if n.startswith(("csrc/cutlass/", "csrc/composable_kernel/", "third_party/")):
                        continue
                    fh = tf.extractfile(member)
                    if fh is not None:
                        yield n, fh.read()

    return name, m.group("version"), walk()


def extract(
    files: Iterable[tuple[str, bytes | mmap.mmap]], families: dict[str, list[re.Pattern[str]]]
) -> list[dict[str, object]]:
    rows: dict[tuple[str, str, object], dict[str, object]] = {}
    for msg in from_files(files):
        fams = keep(msg, families)
        if not fams:
            continue
        row: dict[str, object] = {"text": msg.text, "file": msg.file}
        if msg.line is not None:
            row["line"] = msg.line
        else:
            row["offset"] = msg.offset
        row["kind"] = msg.kind
        row["families"] = fams
        # a binary repeats strings; one row per (file, text)
        key = (msg.file, msg.text, msg.line if msg.line is not None else "")
        rows.setdefault(key, row)
    return sorted(
        rows.values(), key=lambda r: (str(r["file"]), int(r.get("line") or r.get("offset") or 0))
    )  # type: ignore[call-overload]


def write(out: Path, package: str, version: str, rows: list[dict[str, object]]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(f"{package}-*.jsonl"):
        old.unlink()  # one version per package: the one the project supports
    path = out / f"{package}-{version}.jsonl"
    buf = io.StringIO()
    for r in rows:
        buf.write(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n")
    path.write_text(buf.getvalue())
    return path


def citations() -> int:
    """How the log signatures cite what prints their text (docs/report.md quotes it)."""
    sys.path.insert(0, str(ROOT))
    from shop_r1_doctor.framework_messages import cited_message
    from shop_r1_doctor.logscan import load_signatures

    sigs = load_signatures()
    sourced = [s for s in sigs if any(c.package for c in s.printed_by)]
    outside = [s for s in sigs if s.printed_by and all(c.outside for c in s.printed_by)]
    missing = [s for s in sigs if not s.printed_by]
    broken = [
        s.id
        for s in sourced
        for c in s.printed_by
        if c.package
        and not cited_message(c.package, c.version or "", c.at or "", s.pattern, s.example)
    ]
    print(f"signatures: {len(sigs)}")
    print(f"printed by a framework (cited message found): {len(sourced) - len(set(broken))}")
    print(f"printed outside the frameworks: {len(outside)}")
    print(f"matched to no extracted message: {len(missing)}")
    for s in missing:
        print(f"  {s.id} ({s.code})")
    if broken:
        print(f"cited but not found: {', '.join(sorted(set(broken)))}")
    return 1 if broken else 0


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--installed", nargs="*", default=None, help="installed distributions")
    ap.add_argument("--archive", nargs="*", default=[], type=Path, help="wheels or sdists")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--citations",
        action="store_true",
        help="count the signatures' citations, list the unmatched",
    )
    args = ap.parse_args(argv)
    if args.citations:
        return citations()
    families = load_families()
    if args.installed is None:
        args.installed = [] if args.archive else list(STACK)
    installed = args.installed
    for dist in installed:
        try:
            version, files = installed_files(dist)
        except importlib.metadata.PackageNotFoundError:
            print(f"{dist}: not installed here, skipped", file=sys.stderr)
            continue
        rows = extract(files, families)
        path = write(args.out, dist.replace("-", "_"), version, rows)
        print(f"{dist} {version}: {len(rows)} messages -> {_shown(path)}")
    for archive in args.archive:
        if not archive.is_file():
            print(f"{archive}: no such file", file=sys.stderr)
            return 2
        name, version, files = archive_files(archive)
        rows = extract(files, families)
        path = write(args.out, name, version, rows)
        print(f"{archive.name}: {len(rows)} messages -> {_shown(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
