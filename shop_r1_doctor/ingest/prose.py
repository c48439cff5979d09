"""What reporters write about their machine by hand: issue-template answers
(`### Pytorch version` then `2.7.0+cu128`; headings worded as questions or naming two
subjects, `**Which operating system?**`, `### Operating System & CPU Architecture`; the
form's own `Example: ...` placeholder is skipped; a checkbox answer is its ticked box, as
WSL's form asks `### Are you using WSL 1 or WSL 2?` then `- [X] WSL 2`), `Key: value` lines
in any case and markdown (`Torch: 2.0.1+cu117`, `Driver Version: 550.54.15`,
`operation system version: centos_7_9_x64`, `**Platform:** win32`), and sentences
(`python3.10+cuda11.6+torch2.0.0`, `my GPU is 8*Tesla V100`).

Only statements that name their subject and give a version or a GPU model are read, so
what a reporter leaves out stays unknown; an ambiguous number stays unread (`cuda11.6` in
a sentence may be the toolkit, the wheel or the driver's CUDA, so it is not taken). Read
after the tools' own dumps, on the lines none of them read: a fact a tool printed wins
over the reporter's words, and a tool's line is never read twice.
"""

from __future__ import annotations

import re
from typing import Any

from shop_r1_doctor.hardware import gpu_info
from shop_r1_doctor.ingest._common import Line, Partial, is_unknown
from shop_r1_doctor.ingest.platform_text import host_from_os, host_from_platform

_VERSION = r"v?(?P<version>\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.dev|\.post)\d+)?)"
# torch's local tags that say what it was built for; anything else after `+` is prose
_TORCH_LOCAL = r"(?P<local>\+(?:cu\d{2,3}|cpu|rocm\d+(?:\.\d+)*|xpu))?"
# a version in parentheses after its subject, closed (`the latest torch version (2.7.1)`)
_OPEN = r"(?P<paren>\(\s*)?"
_CLOSE = r"(?(paren)\s*\))"
# `torch 2.1.0`, `Torch: 2.0.1+cu117`, `torch2.0.0`, `PyTorch version: 2.5.1`, `torch==2.4.0`,
# `torch version (2.7.1)`; not torchvision/torchaudio/torchtune, whose versions are their own
_TORCH = re.compile(
    r"(?i)(?<![\w.-])(?:py)?torch(?![A-Za-z_-])\*?\s*(?:version|版本)?\s*(?:\(GPU\?\))?\s*(?:==|=|:|：)?\s*"
    + _OPEN
    + _VERSION
    + _TORCH_LOCAL
    + _CLOSE
    + r"(?![\w.])"
)
_PYTHON = re.compile(
    r"(?i)(?<![\w.-])python\s*(?:version|版本)?\s*(?:==|=|:|：)?\s*v?(?P<version>3\.\d{1,2})(?:\.\d+)?(?![\w.])"
)
# the distributions whose versions the checks read; the name as written -> its key
_PACKAGES = {
    "transformers": "transformers",
    "trl": "trl",
    "vllm": "vllm",
    "flash-attn": "flash-attn",
    "flash_attn": "flash-attn",
    "flash-attention": "flash-attn",
    "deepspeed": "deepspeed",
    "accelerate": "accelerate",
    "peft": "peft",
    "bitsandbytes": "bitsandbytes",
    "datasets": "datasets",
    "xformers": "xformers",
    "triton": "triton",
    "numpy": "numpy",
}
_PACKAGE = re.compile(
    r"(?i)(?<![\w.-])(?P<name>"
    + "|".join(re.escape(n) for n in sorted(_PACKAGES, key=len, reverse=True))
    + r")(?![A-Za-z_-])\s*(?:version|版本)?\s*(?:==|=|:|：)?\s*"
    + _OPEN
    + _VERSION
    + _CLOSE
    + r"(?![\w.])"
)
_DRIVER = re.compile(r"(?i)\bDriver Version\s*:\s*(?P<driver>\d{3}\.\d+(?:\.\d+)?)")
# `CUDA Version: 12.2`, `cuda version:  12.2`, `cuda version11.8`: whose CUDA it is, the line
# does not say (below)
_DRIVER_CUDA = re.compile(r"(?i)\bCUDA\s*Version\s*[:：]?\s*(?P<cuda>\d{2}\.\d)\b")
# GPU models as people write them: `RTX 4090`, `GeForce GTX 1080 Ti`, `5070ti`, `RTX A6000`,
# `Tesla V100`, `TeslsV100`, `A100-SXM4-80GB`, `H100`, `TITAN Xp`
_GPU = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:"
    r"(?P<consumer>(?:geforce\s*)?(?P<family>rtx|gtx)\s*-?(?P<number>\d{3,4})(?:\s*(?P<suffix>ti|super))?)"
    r"|(?P<bare>(?P<bnumber>(?:10[5-8]|16[56]|20[678]|30[5-9]|40[6-9]|50[6-9])0)\s*(?P<bsuffix>ti|super))"
    r"|(?P<workstation>rtx\s*a(?P<wnumber>\d{4}))"
    r"|(?P<titan>titan\s*(?P<tmodel>xp|v|rtx)(?![a-z]))"
    r"|(?P<dc>(?:(?:tesla|tesls|nvidia)\s*)?(?P<dmodel>[AHVPLB]\d{2,3}[A-Z]?|GH200|GB200))"
    r"|(?P<small>(?:tesla|nvidia)\s*(?P<smodel>[TLP]4))"
    r")(?![A-Za-z0-9])"
)
# `### Pytorch version` / `**Python version**` headings whose answer is on a later line
_HEADING = re.compile(r"^\s*(?:#{2,6}\s*|\*\*)(?P<key>[^#*:]{2,40}?)\s*(?:\*\*)?\s*:?\s*$")
_ANSWER_KEYS = {
    "pytorch version": "torch",
    "torch version": "torch",
    "python version": "python",
    "os": "os",
    "operating system": "os",
    "gpu": "gpu",
    "gpus": "gpu",
    "gpu model": "gpu",
    # the Linux of a WSL form (microsoft/WSL's `### Distro Version`)
    "distro": "os",
    "distro version": "os",
}
# `### Are you using WSL 1 or WSL 2?` asks which WSL; `### WSL Version` asks for the WSL
# package's version (`2.0.9.0`), which says nothing of the distro's WSL
_WSL_QUESTION = re.compile(r"(?i)\bWSL\s*[12]\s+or\s+WSL\s*[12]\b")
_WSL_ANSWER = re.compile(r"(?i)^(?:WSL\s*)?(?P<wsl>[12])$")
# an issue form's checkbox answers, as GitHub renders them: `- [X] WSL 2`, `- [ ] WSL 1`
_CHECKBOX = re.compile(r"^[-*]\s*\[(?P<mark>[ xX])\]\s*(?P<label>.+)$")
# issue forms word headings as questions (`**Which operating system?**`) or join two
# subjects (`### Operating System & CPU Architecture`): the subject is the first one
_QUESTION = re.compile(r"(?i)^(?:which|what)(?:\s+is)?(?:\s+(?:the|your))?\s+")
_JOINED = re.compile(r"(?i)\s*(?:&|/|,|\band\b)\s*")
# a value printed by the reporter's own one-liner or REPL line, answered on the next line:
# `python -c "import torch; print(torch.__version__)"` then `2.3.1`, `>>> print(sys.version)`
_PRINTED = re.compile(
    r"print\(\s*(?:(?P<module>[A-Za-z_]\w*)\.__version__|(?P<python>sys\.version|platform\.python_version\(\)))\s*\)"
)
# a form's own placeholder left in the paste (`Example: LM Studio 0.3.15`): not an answer
_PLACEHOLDER = re.compile(r"(?i)^(?:example|e\.g\.|eg)\s*[:.]")
# pip's resolver and install lines name versions that are required or offered, not
# installed (`torch 2.1.0 requires triton==2.1.0, but you have triton 2.2.0`)
_PIP_TALK = re.compile(
    r"(?i)\brequires\b|\bbut you have\b|Requirement already satisfied|^\s*Collecting\b"
    r"|^\s*Downloading\b|Could not find a version|from versions:|No matching distribution"
    r"|\bconflict|\bincompatible\b|Would install|^\s*Installing collected"
)
# `OS: Ubuntu 22.04`, `- **OS**: Windows 11`, `operation system version: centos_7_9_x64`,
# `**Platform:** win32` (markdown's `**` is dropped before this is matched)
_KEY_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?(?P<key>[A-Za-z][A-Za-z ]{0,40}?)\s*[:：]\s*(?P<value>.+?)\s*$"
)
_OS_KEY = re.compile(
    r"(?i)^(?:os|operating\s*system|operation\s*system)(?:\s+(?:version|release))?$"
)
# sys.platform's values for the three systems the checks know
_SYS_PLATFORM = {"linux": "linux", "win32": "windows", "darwin": "darwin"}


def parse(lines: list[Line], where: str) -> Partial | None:
    del where  # the reporter's words are read, never refused: nothing here is malformed
    out = Partial("prose")
    pending: str | None = None  # the subject of a heading whose answer comes next
    boxes = False  # the answer is a list of checkboxes: only a ticked one answers
    for line in lines:
        text = line.text.strip()
        if not text:
            continue
        heading = _HEADING.match(text)
        if heading and _subject(heading.group("key")) is not None:
            pending, boxes = _subject(heading.group("key")), False
            continue
        if _PLACEHOLDER.match(text):
            continue
        if pending is not None:
            box = _CHECKBOX.match(text)
            if box is not None:
                if box.group("mark") != " ":
                    _answer(out, pending, box.group("label").strip(), line)
                boxes = True
                continue
            if not boxes:
                _answer(out, pending, text, line)
                pending = None
                continue
            pending = None  # the boxes ended: this line is read as any other
        printed = _PRINTED.search(text)
        if printed and (subject := _printed_subject(printed)) is not None:
            pending = subject
            continue
        if not _PIP_TALK.search(text):
            _statements(out, text, line)
    return out if out.lines else None


def _subject(key: str) -> str | None:
    """What a heading asks for: `Which operating system?` and `Operating System & CPU
    Architecture` both ask for the OS."""
    if _WSL_QUESTION.search(key):
        return "wsl"
    asked = _QUESTION.sub("", key.strip().rstrip("?").strip())
    return _ANSWER_KEYS.get(_JOINED.split(asked)[0].strip().lower())


def _printed_subject(m: re.Match[str]) -> str | None:
    """What a printed expression names: torch, a package the checks read, or Python."""
    if m.group("python"):
        return "python"
    module = m.group("module").lower()
    if module == "torch":
        return "torch"
    return f"package:{_PACKAGES[module]}" if module in _PACKAGES else None


def _answer(out: Partial, subject: str, text: str, line: Line) -> None:
    """The line under a template heading or after a printing command: the value alone
    (`2.7.0+cu128`, `3.12`, `Linux`; sys.version's `3.10.12 (main, ...)`)."""
    if is_unknown(text):
        return
    if subject == "torch":
        m = re.fullmatch(_VERSION + _TORCH_LOCAL, text.strip("`"))
        if m:
            _torch(out, m, line)
    elif subject.startswith("package:"):
        m = re.fullmatch(_VERSION, text.strip("`"))
        if m:
            out.package(subject.removeprefix("package:"), m.group("version"), line.number)
    elif subject == "python":
        m = re.fullmatch(r"v?(3\.\d{1,2})(?:\.\d+)?(?:\s+\(.*)?", text.strip("`"))
        if m:
            _python(out, m.group(1), line)
    elif subject == "os":
        _host(out, host_from_os(text.strip("`")), line)
    elif subject == "gpu":
        _statements(out, text, line)  # `Nvidia RTX 4090 24GB *2`: the models it names
    elif subject == "wsl" and (m := _WSL_ANSWER.match(text)):
        # a WSL distro is Linux, as the live probe records it (os linux, wsl 1/2)
        _host(out, {"os": "linux", "wsl": int(m.group("wsl"))}, line)


def _statements(out: Partial, text: str, line: Line) -> None:
    # markdown's bold and code marks: `**Platform:** win32`, `**`datasets` version:** 4.5.0`
    text = text.replace("**", "").replace("`", "")
    key_line = _KEY_LINE.match(text)
    if key_line and not is_unknown(key_line.group("value")):
        _key_value(out, key_line.group("key"), key_line.group("value"), line)
    for m in _TORCH.finditer(text):
        _torch(out, m, line)
    for m in _PYTHON.finditer(text):
        _python(out, m.group("version"), line)
    for m in _PACKAGE.finditer(text):
        out.package(_PACKAGES[m.group("name").lower()], m.group("version"), line.number)
    driver = _DRIVER.search(text)
    if driver:
        section = out.section("driver")
        section.setdefault("version", driver.group("driver"))
        out.lines.append(line.number)
    cuda = _DRIVER_CUDA.search(text)
    # `CUDA Version:` is the driver's only beside `Driver Version` (nvidia-smi's header, on
    # one line or the next): elsewhere it may be the toolkit's or the wheel's
    if cuda and (driver or ((line.number - 1) in out.lines and "driver" in out.facts)):
        out.section("driver").setdefault("cuda_version", cuda.group("cuda"))
        out.lines.append(line.number)
    for m in _GPU.finditer(text):
        name = _gpu_name(m)
        if name and gpu_info(name) is not None:
            _gpu(out, name, line)


def _key_value(out: Partial, key: str, value: str, line: Line) -> None:
    """`OS: ...` / `operation system version: ...` (an OS named, not a bare build number)
    and `Platform: ...` as sys.platform (`win32`) or platform.platform() prints it."""
    if _OS_KEY.match(key.strip()) and re.match(r"[A-Za-z]", value):
        _host(out, host_from_os(value), line)
    elif key.strip().lower() == "platform":
        system = _SYS_PLATFORM.get(value.lower())
        _host(out, {"os": system} if system else host_from_platform(value), line)


def _torch(out: Partial, m: re.Match[str], line: Line) -> None:
    # the version as written, local tag included: the checks read the wheel's CUDA from it
    out.package("torch", m.group("version") + (m.group("local") or ""), line.number)


def _python(out: Partial, version: str, line: Line) -> None:
    out.section("host").setdefault("python", {}).setdefault("version", version)
    out.lines.append(line.number)


def _host(out: Partial, host: dict[str, Any], line: Line) -> None:
    if host:
        section = out.section("host")
        for key, val in host.items():
            section.setdefault(key, val)
        out.lines.append(line.number)


def _gpu(out: Partial, name: str, line: Line) -> None:
    gpus: list[dict[str, Any]] = out.facts.setdefault("gpus", [])
    if all(g.get("name") != name for g in gpus):
        gpus.append({"index": len(gpus), "name": name})
    out.lines.append(line.number)


def _gpu_name(m: re.Match[str]) -> str | None:
    """The model in the form the GPU table knows (`NVIDIA GeForce RTX 5070 Ti`)."""
    if m.group("consumer"):
        suffix = {"ti": " Ti", "super": " SUPER"}.get((m.group("suffix") or "").lower(), "")
        return f"NVIDIA GeForce {m.group('family').upper()} {m.group('number')}{suffix}"
    if m.group("bare"):
        number = m.group("bnumber")
        family = "GTX" if number.startswith(("10", "16")) else "RTX"
        suffix = {"ti": " Ti", "super": " SUPER"}[m.group("bsuffix").lower()]
        return f"NVIDIA GeForce {family} {number}{suffix}"
    if m.group("workstation"):
        return f"NVIDIA RTX A{m.group('wnumber')}"
    if m.group("titan"):
        model = {"xp": "Xp", "v": "V", "rtx": "RTX"}[m.group("tmodel").lower()]
        return f"NVIDIA TITAN {model}"
    if m.group("dc"):
        return f"NVIDIA {m.group('dmodel').upper()}"
    if m.group("small"):
        return f"NVIDIA Tesla {m.group('smodel').upper()}"
    return None
