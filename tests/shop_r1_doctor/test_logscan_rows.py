"""logscan as decision tables with hand-computed expectations: the whole error message of
each malformed signature/evidence entry, evidence gating (`when` all, `unless` any), the
ranking of `diagnose_log` (rank, then supporting evidence, then line), and the block
boundaries of the traceback / fatal-error / signal extractors."""

from __future__ import annotations

import re

import pytest

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.logscan import (
    Evidence,
    diagnose_log,
    extract_fatal,
    extract_traceback,
    find_evidence,
    load_knowledge_file,
    load_signatures_file,
    parse_knowledge,
    scan_log,
    signal_lines,
)

HINT = "; fix the signature (see the comment at the top of the file)"
SCHEMA = "shop-r1.log-signatures/1"
GOOD = {
    "id": "x",
    "code": "CODE_X",
    "pattern": "boom \\d+",
    "title": "t",
    "try": "fix it",
    "source": "https://example.org/issue",
    "example": "boom 42",
}
GPU = {"id": "gpu", "pattern": "RTX", "meaning": "m"}
LINES = {
    "signatures[0]": 7,
    "signatures[1]": 9,
    "signatures[2]": 11,
    "evidence[0]": 3,
    "evidence[1]": 4,
}


def _doc(*entries, evidence=None, **top):
    doc = {"schema": SCHEMA, "signatures": list(entries), **top}
    if evidence is not None:
        doc["evidence"] = evidence
    return doc


# (document, the whole message parse_knowledge raises)
BAD = [
    ([GOOD], f"f.yaml: schema: expected {SCHEMA!r}, got None{HINT}"),
    ({"schema": "v0", "signatures": [GOOD]}, f"f.yaml: schema: expected {SCHEMA!r}, got 'v0'{HINT}"),
    ({"schema": SCHEMA}, f"f.yaml: signatures: missing{HINT}"),
    (_doc(GOOD, colour=1), f"f.yaml: colour: unknown field{HINT}"),
    (_doc(), f"f.yaml: signatures: expected a non-empty list{HINT}"),
    ({"schema": SCHEMA, "signatures": "x"}, f"f.yaml: signatures: expected a list, got 'x'{HINT}"),
    # evidence entries
    (_doc(GOOD, evidence={"gpu": GPU}), f"f.yaml: evidence: expected a list of {{id, pattern, meaning}}, got {{'gpu': {GPU!r}}}{HINT}"),
    (_doc(GOOD, evidence=["RTX"]), f"f.yaml:3: evidence[0]: expected a mapping, got 'RTX'{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "note": 1}]), f"f.yaml:3: evidence[0].note: unknown field{HINT}"),
    (_doc(GOOD, evidence=[{"id": "gpu", "pattern": "RTX"}]), f"f.yaml:3: evidence[0].meaning: missing{HINT}"),
    # fields are checked missing in order (id, pattern, meaning) before their values
    (_doc(GOOD, evidence=[{"pattern": "RTX"}]), f"f.yaml:3: evidence[0].id: missing{HINT}"),
    (_doc(GOOD, evidence=[{"id": "gpu"}]), f"f.yaml:3: evidence[0].pattern: missing{HINT}"),
    (_doc(GOOD, evidence=[{"id": "Gpu", "pattern": "RTX"}]), f"f.yaml:3: evidence[0].meaning: missing{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "id": " "}]), f"f.yaml:3: evidence[0].id: expected a non-empty string, got ' '{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "id": "Gpu"}]), f"f.yaml:3: evidence[0].id: 'Gpu': evidence names are lower_snake words{HINT}"),
    # a name that only starts like one (fullmatch, not match)
    (_doc(GOOD, evidence=[{**GPU, "id": "gpu-x"}]), f"f.yaml:3: evidence[0].id: 'gpu-x': evidence names are lower_snake words{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "id": "1gpu"}]), f"f.yaml:3: evidence[0].id: '1gpu': evidence names are lower_snake words{HINT}"),
    (_doc(GOOD, evidence=[GPU, {**GPU, "pattern": "GTX"}]), f"f.yaml:4: evidence[1].id: 'gpu' is named twice{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "pattern": "RTX ("}]), f"f.yaml:3: evidence[0].pattern: not a valid regex (missing ), unterminated subpattern at position 4){HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "pattern": ""}]), f"f.yaml:3: evidence[0].pattern: expected a non-empty string, got ''{HINT}"),
    (_doc(GOOD, evidence=[{**GPU, "meaning": 3}]), f"f.yaml:3: evidence[0].meaning: expected a string, got 3{HINT}"),
    # signature entries
    # the id named is the repeated one, not its neighbour's
    (_doc(GOOD, {**GOOD, "id": "y"}, {**GOOD, "id": "x"}), f"f.yaml:11: signatures[2].id: duplicate id 'x'; give each its own id{HINT}"),
    (_doc(GOOD, {**GOOD, "code": "CODE_Y"}), f"f.yaml:9: signatures[1].id: duplicate id 'x'; give each its own id{HINT}"),
    (_doc({**GOOD, "example": " "}), f"f.yaml:7: signatures[0].example: expected a non-empty string, got ' '{HINT}"),
    (_doc({**GOOD, "source": "example.org"}), f"f.yaml:7: signatures[0].source: expected an https:// URL, got 'example.org'{HINT}"),
    (_doc({**GOOD, "code": "CODE-X"}), f"f.yaml:7: signatures[0].code: 'CODE-X' is not an UPPER_SNAKE finding code{HINT}"),
    (_doc({**GOOD, "code": "C"}), f"f.yaml:7: signatures[0].code: 'C' is not an UPPER_SNAKE finding code{HINT}"),
    (_doc({**GOOD, "also": ["CODE_Y", "y"]}), f"f.yaml:7: signatures[0].also[1]: 'y' is not an UPPER_SNAKE finding code{HINT}"),
    (_doc({**GOOD, "also": "CODE_Y"}), f"f.yaml:7: signatures[0].also: expected a list of finding codes, got 'CODE_Y'{HINT}"),
    (_doc({**GOOD, "silent": 1}), f"f.yaml:7: signatures[0].silent: expected true/false, got 1{HINT}"),
    (_doc({**GOOD, "rank": True}), f"f.yaml:7: signatures[0].rank: expected an integer, got True{HINT}"),
    (_doc({**GOOD, "rank": "1"}), f"f.yaml:7: signatures[0].rank: expected an integer, got '1'{HINT}"),
    (_doc({**GOOD, "pattern": "boom ("}), f"f.yaml:7: signatures[0].pattern: not a valid regex (missing ), unterminated subpattern at position 5){HINT}"),
    (_doc({**GOOD, "example": "bang 42"}), f"f.yaml:7: signatures[0].pattern: does not match its own example; fix one of them{HINT}"),
    (_doc({**GOOD, "when": "gpu"}, evidence=[GPU]), f"f.yaml:7: signatures[0].when: expected a list of evidence names, got 'gpu'{HINT}"),
    (_doc({**GOOD, "unless": [1]}, evidence=[GPU]), f"f.yaml:7: signatures[0].unless: expected a list of evidence names, got [1]{HINT}"),
    (_doc({**GOOD, "prefer": None}, evidence=[GPU]), f"f.yaml:7: signatures[0].prefer: expected a list of evidence names, got None{HINT}"),
    # unknown evidence names: the index and every known name (sorted), or "none"
    (_doc({**GOOD, "when": ["gpu"]}), f"f.yaml:7: signatures[0].when[0]: unknown evidence 'gpu'; known: none{HINT}"),
    (
        _doc({**GOOD, "unless": ["wsl", "gpus"]}, evidence=[{**GPU, "id": "wsl"}, GPU]),
        f"f.yaml:7: signatures[0].unless[1]: unknown evidence 'gpus'; known: gpu, wsl{HINT}",
    ),
    (
        _doc(GOOD, {**GOOD, "id": "y", "prefer": ["gpu", "cpu"]}, evidence=[GPU]),
        f"f.yaml:9: signatures[1].prefer[1]: unknown evidence 'cpu'; known: gpu{HINT}",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("doc", "message"), BAD)
def test_bad_knowledge_files_say_the_whole_message(doc, message):
    with pytest.raises(ToolError) as err:
        parse_knowledge(doc, "f.yaml", LINES)
    assert str(err.value) == message


def test_a_full_entry_and_its_evidence_parse_to_their_fields():
    wsl = {"id": "wsl", "pattern": "WSL2?", "meaning": "the WSL2 VM"}
    doc = _doc(
        {**GOOD, "when": ["gpu"], "unless": ["wsl"], "prefer": ["wsl", "gpu"], "rank": -2},
        {**GOOD, "id": "y", "code": "CODE_Y", "also": ["CODE_Z"], "silent": False, "rank": 3},
        evidence=[GPU, wsl],
    )
    k = parse_knowledge(doc, "f.yaml")
    assert [(e.name, e.pattern.pattern, e.meaning) for e in k.evidence] == [
        ("gpu", "RTX", "m"),
        ("wsl", "WSL2?", "the WSL2 VM"),
    ]
    x, y = k.signatures
    assert (x.when, x.unless, x.prefer, x.rank, x.also) == (
        ("gpu",),
        ("wsl",),
        ("wsl", "gpu"),
        -2,
        (),
    )
    assert (y.when, y.unless, y.prefer, y.rank, y.codes) == ((), (), (), 3, ("CODE_Y", "CODE_Z"))
    assert x.pattern.pattern == "boom \\d+" and y.silent is False
    # evidence is optional; without it there is none
    assert parse_knowledge(_doc(GOOD), "f.yaml").evidence == ()


def test_a_knowledge_file_on_disk(tmp_path):
    path = tmp_path / "sigs.yaml"
    path.write_text(
        f"schema: {SCHEMA}\n"
        "evidence:\n  - {id: gpu, pattern: 'RTX', meaning: m}\n"
        "signatures:\n"
        "  - {id: a, code: X_Y, pattern: 'e+', title: t, try: t, source: 'https://x', example: ee, when: [gpu]}\n"
        "  - {id: b, code: X_Z, pattern: 'f', title: t, try: t, source: 'https://x', example: f, rank: 1}\n",
        encoding="utf-8",
    )
    sigs = load_signatures_file(path)
    assert [(s.id, s.when, s.rank) for s in sigs] == [("a", ("gpu",), 0), ("b", (), 1)]
    assert [e.name for e in load_knowledge_file(path).evidence] == ["gpu"]
    path.write_bytes(b"\xff\xfe schema")
    with pytest.raises(ToolError, match=r"cannot read log signatures: "):
        load_knowledge_file(path)


# --- evidence ---------------------------------------------------------------------------

EV = (
    Evidence("gpu", re.compile(r"RTX\s+\d+"), "m"),
    Evidence("wsl", re.compile(r"WSL2?"), "m"),
)

# (text, evidence found)
EVIDENCE_ROWS = [
    ("nothing here", {}),
    ("GPU: RTX   5090\n", {"gpu": "RTX 5090"}),  # whitespace runs read as one space
    ("RTX\n3090", {"gpu": "RTX 3090"}),
    ("RTX 3090 and RTX 5090 on WSL2", {"gpu": "RTX 3090", "wsl": "WSL2"}),  # the first shows it
    ("RTX " + "1" * 100, {"gpu": "RTX " + "1" * 76}),  # cut to 80 characters
    ("RTX " + "1" * 76, {"gpu": "RTX " + "1" * 76}),
]


@pytest.mark.parametrize(("text", "found"), EVIDENCE_ROWS)
def test_find_evidence(text, found):
    assert find_evidence(text, EV) == found


def test_find_evidence_reads_the_shipped_patterns_only_by_default():
    text = "docker run --gpus all on WSL2"
    assert find_evidence(text) == {"container": "docker", "wsl": "WSL2"}
    assert find_evidence(text, ()) == {}


# --- scan_log: gating by evidence ----------------------------------------------------------

GATED = parse_knowledge(
    _doc(
        {**GOOD, "id": "all", "code": "NEEDS_BOTH", "when": ["blackwell", "wsl"]},
        {**GOOD, "id": "any", "code": "NEITHER", "unless": ["blackwell", "wsl"]},
        {**GOOD, "id": "gpu", "code": "GPU_ONLY", "when": ["blackwell"], "unless": ["wsl"]},
        {**GOOD, "id": "plain", "code": "ALWAYS"},
        evidence=[{**GPU, "id": "blackwell"}, {"id": "wsl", "pattern": "WSL", "meaning": "m"}],
    ),
    "f.yaml",
).signatures

# (evidence shown, codes that apply to "boom 1"); without given evidence, scan_log reads
# the shipped evidence patterns in the log
GATING_ROWS = [
    ({}, ["NEITHER", "ALWAYS"]),
    ({"blackwell": "RTX 5090"}, ["GPU_ONLY", "ALWAYS"]),
    ({"wsl": "WSL2"}, ["ALWAYS"]),
    ({"blackwell": "RTX 5090", "wsl": "WSL2"}, ["NEEDS_BOTH", "ALWAYS"]),
]


@pytest.mark.parametrize(("shown", "codes"), GATING_ROWS)
def test_when_needs_all_unless_rules_out_on_any(shown, codes):
    by_evidence = scan_log("boom 1", GATED, evidence=shown)
    assert sorted(m.signature.code for m in by_evidence) == sorted(codes)
    # the same evidence, shown by the log itself (behind a launcher prefix)
    text = "\n".join(f"[rank0]: {v}" for v in shown.values()) + "\nboom 1"
    assert sorted(m.signature.code for m in scan_log(text, GATED)) == sorted(codes)


def test_given_evidence_replaces_what_the_log_shows():
    assert [m.signature.code for m in scan_log("RTX 5090 WSL2\nboom 1", GATED, evidence={})] == [
        "NEITHER",
        "ALWAYS",
    ]


def test_no_signatures_find_nothing():
    assert scan_log("[rank0]: c++: fatal error: Killed signal terminated program cc1plus", ()) == []
    # a compiler killed in a build that is not shown to be flash-attn's: host RAM
    (m,) = scan_log("[rank0]: c++: fatal error: Killed signal terminated program cc1plus")
    assert (m.signature.code, m.line_no, m.line) == (
        "HOST_OOM_KILLED",
        1,
        "c++: fatal error: Killed signal terminated program cc1plus",
    )


def test_the_line_quoted_is_the_whole_line_of_the_match():
    (plain,) = [s for s in GATED if s.id == "plain"]
    # first line, last line without a newline, a middle line, with surrounding blanks
    assert [(m.line_no, m.line) for m in scan_log("xboom 1y", (plain,))] == [(1, "xboom 1y")]
    assert [(m.line_no, m.line) for m in scan_log("a\nb\n  xboom 1y  ", (plain,))] == [
        (3, "xboom 1y")
    ]
    assert [(m.line_no, m.line) for m in scan_log("a\n\tboom 7 \nc", (plain,))] == [(2, "boom 7")]


# --- diagnose_log: rank, then supporting evidence, then line ----------------------------

NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
LIBCUDA = "OSError: libcuda.so: cannot open shared object file: No such file or directory"


def _codes(text, context=""):
    return [m.code for m in diagnose_log(text, context).matches]


def test_equal_rank_orders_by_line():
    # WSL_LIBCUDA_NOT_LINKABLE and TRAINER_ZERO_STEPS_TINY_DATASET: rank 0, no evidence
    zero = (
        "There seems not to be a single sample in your epoch_iterator, stopping training at step 0!"
    )
    assert _codes(f"{LIBCUDA}\n{zero}") == [
        "WSL_LIBCUDA_NOT_LINKABLE",
        "TRAINER_ZERO_STEPS_TINY_DATASET",
    ]
    assert _codes(f"{zero}\n{LIBCUDA}") == [
        "TRAINER_ZERO_STEPS_TINY_DATASET",
        "WSL_LIBCUDA_NOT_LINKABLE",
    ]


def test_supporting_evidence_beats_line_order_at_equal_rank():
    # no-kernel-image-blackwell (rank 0, when blackwell, prefer vllm) on the later line
    text = f"{LIBCUDA}\nGPU: NVIDIA GeForce RTX 5090\n{NO_KERNEL}"
    d = diagnose_log(text)
    assert [m.code for m in d.matches] == ["TORCH_NO_BLACKWELL_ARCH", "WSL_LIBCUDA_NOT_LINKABLE"]
    assert [m.why for m in d.matches] == [("blackwell: RTX 5090",), ()]
    assert d.evidence == {"blackwell": "RTX 5090", "consumer_gpus": "GeForce"}
    # vLLM in the failing command adds to the support, in when-then-prefer order
    d = diagnose_log(text, context="vllm serve Qwen/Qwen2.5-0.5B")
    assert d.lead is not None and d.lead.why == ("blackwell: RTX 5090", "vllm: vllm")
    assert d.lead.signature.id == "no-kernel-image-blackwell"


def test_rank_beats_supporting_evidence():
    # ranks-share-gpu (rank 1, no evidence) above libcuda-missing-container (rank 0, when
    # container: one piece of support), whatever the line order
    dup = "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000"
    lib1 = "OSError: libcuda.so.1: cannot open shared object file: No such file or directory"
    for text in (f"docker run img\n{lib1}\n{dup}", f"{dup}\ndocker run img\n{lib1}"):
        d = diagnose_log(text)
        assert [(m.code, m.why) for m in d.matches] == [
            ("RANKS_SHARE_GPU", ()),
            ("DOCKER_GPU_RUNTIME_MISSING", ("container: docker",)),
        ]


def test_context_is_evidence_never_a_symptom():
    # the context's first word must still start a word (joined on a new line)
    assert _codes(NO_KERNEL, context="RTX 5090") == ["TORCH_NO_BLACKWELL_ARCH"]
    assert _codes(NO_KERNEL) == ["CUDA_NO_KERNEL_IMAGE"]
    d = diagnose_log("all fine", context="Killed")
    assert d.matches == () and d.lead is None and d.evidence == {}
    # launcher prefixes are gone before evidence is read
    assert diagnose_log("[rank0]:5090\n" + NO_KERNEL).evidence == {"blackwell": "5090"}


# --- extract_traceback ------------------------------------------------------------------------

HEADER = "Traceback (most recent call last):"


def _tb(frames: int) -> str:
    return "\n".join([HEADER, *(f"  f{i}" for i in range(frames)), "E: x"])


def test_long_tracebacks_keep_the_head_and_the_tail():
    # 32 lines, at most 20: the first 10, a marker for the 13 cut, the last 9
    assert extract_traceback(_tb(30), max_lines=20) == "\n".join(
        [HEADER, *(f"  f{i}" for i in range(9)), "    ... 13 lines cut ...",
         *(f"  f{i}" for i in range(22, 30)), "E: x"]
    )  # fmt: skip
    assert extract_traceback(_tb(18), max_lines=20) == _tb(18)  # exactly 20 lines: all
    assert extract_traceback(_tb(78)) == _tb(78)  # 80 by default
    assert extract_traceback(_tb(79)).splitlines()[10] == "    ... 2 lines cut ..."


def test_the_exception_message_runs_on_until_a_blank_or_log_line():
    msg = [f"m{i}" for i in range(7)]
    tb = "\n".join([HEADER, '  File "a.py", line 1', "\tx()", "", "E: y", *msg])
    # up to five more lines of the message
    assert extract_traceback(tb) == "\n".join(
        [HEADER, '  File "a.py", line 1', "\tx()", "", "E: y", *msg[:5]]
    )
    for log_line in [
        "2026-11-23 02:00:00 step 3",
        "[rank1] retry",
        "INFO loading",
        "WARNING x",
        "ERROR y",
        "DEBUG z",
        "Map: 100%|####| 8/8",
        "wandb: Syncing run",
        "",
    ]:
        assert extract_traceback(f"{HEADER}\n  f\nE: y\nmore\n{log_line}\nm9") == (
            f"{HEADER}\n  f\nE: y\nmore"
        ), log_line


def test_no_traceback_no_block():
    assert extract_traceback("E: y\n  f\n") is None
    assert extract_traceback(f"{HEADER}\n") == HEADER
    # blank lines at the end of the frames are not part of the block
    assert extract_traceback(f"{HEADER}\n  f\n\n") == f"{HEADER}\n  f"


# --- extract_fatal ----------------------------------------------------------------------------

FATAL = [
    "Fatal Python error: Segmentation fault",
    "",
    "Thread 0x00007f3c (most recent call first):",
    '  File "threading.py", line 331 in wait',
    "",
    "Current thread's C stack trace (most recent call first):",
    "  Binary file python3.13, at _Py_DumpStack+0x4c",
    "Current thread 0x00007f40 (most recent call first):",
    '  File "train.py", line 9 in <module>',
    "Stack (most recent call first):",
    "\t<frame>",
    "Extension modules: numpy.core._multiarray_umath, torch._C (total: 2)",
]


def test_fatal_block_keeps_faulthandler_lines_and_stops_at_the_next_line():
    text = "\n".join(["before", *FATAL, "Segmentation fault (core dumped)", "  later"])
    assert extract_fatal(text) == "\n".join(FATAL)


def test_fatal_block_is_limited_and_the_last_one_wins():
    frames = [f"  f{i}" for i in range(50)]
    assert extract_fatal("\n".join([FATAL[0], *frames])) == "\n".join([FATAL[0], *frames[:40]])
    assert extract_fatal("\n".join([FATAL[0], *frames]), max_lines=3) == "\n".join(
        [FATAL[0], *frames[:3]]
    )
    two = "Fatal Python error: Aborted\n  a\nok\n[rank0]: Fatal Python error: Bus error\n  b\n"
    assert extract_fatal(two) == "Fatal Python error: Bus error\n  b"
    assert extract_fatal("no fatal error") is None
    # a trailing blank line is not part of the block
    assert extract_fatal("Fatal Python error: Aborted\n\nnext") == "Fatal Python error: Aborted"


def test_only_faulthandler_headers_continue_the_fatal_block():
    # "Stack (most recent call first):" is faulthandler's; any other "Stack..." line is not
    text = (
        "Fatal Python error: Aborted\nStack (most recent call first):\n  f\nStacked 3 tensors\n  g"
    )
    assert (
        extract_fatal(text) == "Fatal Python error: Aborted\nStack (most recent call first):\n  f"
    )
    text = "Fatal Python error: Aborted\nThreads: 3 (most recent call first):\n  f"
    assert extract_fatal(text) == "Fatal Python error: Aborted"


# --- signal_lines -----------------------------------------------------------------------------


def test_signal_lines_keep_the_last_eight_cut_to_300():
    lines = [f"worker {i} exited with signal SIGKILL" for i in range(9)]
    assert signal_lines("\n".join(lines)) == lines[1:]
    long = "*** SIGSEGV received at time=1 *** " + "x" * 400
    assert signal_lines(long + "\n" + long + "y") == [long[:300]]
    assert signal_lines("\n".join(lines), limit=2) == lines[-2:]
