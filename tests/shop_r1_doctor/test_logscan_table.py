"""Log signatures as a decision table: every shipped signature finds its own example line,
also behind launcher prefixes, and a specific signature is never replaced by a generic
one that matches the same line; the file's validation names the entry at fault."""

from __future__ import annotations

import pytest

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.logscan import (
    load_signatures,
    parse_signatures,
    scan_log,
    signal_lines,
    strip_prefixes,
)

SIGNATURES = load_signatures()
PREFIXES = [
    "",
    "[rank0]: ",
    "[rank3]:",
    "[default1]: ",
    "[12:03:04] ",
    "[12:03:04.123] [rank1]: ",
    "(pid=5477) ",
    "(RayWorker pid=12, ip=10.0.0.1) ",
    "(TaskRunner pid=9) [rank0]: ",
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("sig", SIGNATURES, ids=[s.id for s in SIGNATURES])
def test_each_signature_finds_its_example_behind_any_prefix(sig, prefix):
    text = f"some unrelated line\n{prefix}{sig.example}\nanother line"
    # the evidence its `when` asks for (GPU family, framework, platform) is given; its
    # `unless` evidence is not: under that evidence its own example must select it
    found = {m.signature.code: m for m in scan_log(text, evidence=_evidence_for(sig))}
    assert sig.code in found, [m.signature.id for m in found.values()]
    match = found[sig.code]
    # its own signature wins its code: not an earlier, more generic one
    assert match.signature.id == sig.id
    # and the line quoted is the example's (its first line, without launcher prefixes)
    assert match.line_no == 2
    assert match.line == strip_prefixes(sig.example).splitlines()[0].strip()[:300]


def _evidence_for(sig):
    return {name: "given by the test" for name in sig.when}


def _applies(sig, evidence):
    return all(e in evidence for e in sig.when) and not any(e in evidence for e in sig.unless)


def test_specific_signatures_come_before_generic_ones_on_the_same_line():
    by_id = {s.id: s for s in SIGNATURES}
    pairs = []
    for i, specific in enumerate(SIGNATURES):
        evidence = _evidence_for(specific)
        for generic in SIGNATURES[i + 1 :]:
            if generic.pattern.search(specific.example) and _applies(generic, evidence):
                pairs.append((specific.id, generic.id))
                found = [m.signature.id for m in scan_log(specific.example, evidence=evidence)]
                if generic.code == specific.code:
                    # one reading per code: the specific one is the code's reading
                    assert found[0] == specific.id
                else:
                    # both codes are reported, the specific one first
                    assert found[:2] == [specific.id, generic.id]
    assert ("fa-cxx11-abi", "fa-undefined-symbol") in pairs
    assert by_id["fa-cxx11-abi"].code != by_id["fa-undefined-symbol"].code


def test_scan_reports_one_match_per_code_in_line_order():
    a, b = SIGNATURES[0], SIGNATURES[1]
    text = f"{b.example}\n{a.example}\nx\n{b.example}"
    found = scan_log(text, (a, b))
    assert [(m.signature.id, m.line_no) for m in found] == [(b.id, 1), (a.id, 2)]
    long_line = a.example + " " + "x" * 400
    (m,) = scan_log("\n\n" + long_line, (a,))
    assert m.line_no == 3 and len(m.line) == 300 and m.line == long_line[:300]
    assert scan_log("nothing to see", (a, b)) == []


# (text, stripped)
STRIP_ROWS = [
    ("[rank0]: x", "x"),
    ("[rank12]:x", "x"),
    ("[default0]: x", "x"),
    ("[12:03:04] x", "x"),
    ("[12:03:04.5] [rank0]: x", "x"),
    ("(pid=1) x", "x"),
    ("(pid=1)x", "x"),
    ("(RayWorker pid=12, ip=10.0.0.1) x", "x"),
    ("(raylet:node-1 pid=3) x", "x"),
    ("a [rank0]: x", "a [rank0]: x"),  # only at the start of a line
    ("[rankX]: x", "[rankX]: x"),
    ("[12:03] x", "[12:03] x"),
    ("l1\n[rank1]: l2\n(pid=2) l3", "l1\nl2\nl3"),
]


@pytest.mark.parametrize(("text", "want"), STRIP_ROWS)
def test_strip_prefixes(text, want):
    assert strip_prefixes(text) == want


def test_signal_lines_are_deduplicated_and_limited():
    text = "\n".join(
        [
            "[rank0]: *** SIGSEGV received at time=1 ***",
            "[rank1]: *** SIGSEGV received at time=1 ***",
            "Segmentation fault (core dumped)",
            "all good",
            *[f"worker {i} exited with signal SIGKILL" for i in range(10)],
        ]
    )
    lines = signal_lines(text)
    assert len(lines) == 8 and lines[-1] == "worker 9 exited with signal SIGKILL"
    assert signal_lines(text, limit=20)[:2] == [
        "*** SIGSEGV received at time=1 ***",
        "Segmentation fault (core dumped)",
    ]
    assert signal_lines("fine\nno crash here") == []


GOOD = {
    "id": "x",
    "code": "CODE_X",
    "pattern": "boom \\d+",
    "title": "t",
    "try": "fix it",
    "source": "https://example.org/issue",
    "example": "boom 42",
}


def _doc(*entries):
    return {"schema": "shop-r1.log-signatures/1", "signatures": list(entries)}


# (document, message fragment)
BAD_FILES = [
    (
        {"schema": "other", "signatures": [GOOD]},
        "f.yaml: schema: expected 'shop-r1.log-signatures/1'",
    ),
    ([GOOD], "f.yaml: schema: expected"),
    (_doc(), "f.yaml: signatures: expected a non-empty list"),
    ({"schema": "shop-r1.log-signatures/1", "signatures": {"a": 1}}, "signatures: expected a list"),
    (_doc("text"), "f.yaml:7: signatures[0]: expected a mapping"),
    (_doc({**GOOD, "colour": "red"}), "f.yaml:7: signatures[0].colour: unknown field"),
    (_doc({**GOOD, "title": " "}), "signatures[0].title: expected a non-empty string"),
    (_doc({k: v for k, v in GOOD.items() if k != "try"}), "signatures[0].try: missing"),
    (_doc({**GOOD, "also": "CODE_Y"}), "signatures[0].also: expected a list of finding codes"),
    (_doc({**GOOD, "also": [1]}), "signatures[0].also: expected a list of finding codes"),
    (
        _doc({**GOOD, "code": "lower_case"}),
        "signatures[0].code: 'lower_case' is not an UPPER_SNAKE",
    ),
    (_doc({**GOOD, "also": ["Bad"]}), "signatures[0].also[0]: 'Bad' is not an UPPER_SNAKE"),
    (_doc({**GOOD, "silent": "yes"}), "signatures[0].silent: expected true/false"),
    (
        _doc({**GOOD, "source": "http://example.org"}),
        "signatures[0].source: expected an https:// URL",
    ),
    (_doc({**GOOD, "pattern": "boom ("}), "signatures[0].pattern: not a valid regex"),
    (_doc({**GOOD, "example": "bang"}), "signatures[0].pattern: does not match its own example"),
    (_doc(GOOD, {**GOOD, "code": "CODE_Y"}), "f.yaml:9: signatures[1].id: duplicate id"),
    (_doc({**GOOD, "when": ["gpus"]}), "signatures[0].when[0]: unknown evidence 'gpus'"),
    (_doc({**GOOD, "rank": "high"}), "signatures[0].rank: expected"),
]


@pytest.mark.parametrize(("doc", "message"), BAD_FILES)
def test_bad_signature_files_name_the_entry(doc, message):
    with pytest.raises(ToolError) as err:
        parse_signatures(doc, "f.yaml", {"signatures[0]": 7, "signatures[1]": 9})
    assert message in str(err.value)


def test_a_good_entry_parses_with_defaults():
    (sig,) = parse_signatures(_doc(GOOD), "f.yaml")
    assert (sig.id, sig.code, sig.title, sig.try_, sig.source, sig.example) == (
        "x",
        "CODE_X",
        "t",
        "fix it",
        "https://example.org/issue",
        "boom 42",
    )
    assert sig.also == () and sig.silent is False and sig.codes == ("CODE_X",)
    (both,) = parse_signatures(_doc({**GOOD, "also": ["CODE_Y"], "silent": True}), "f.yaml")
    assert both.codes == ("CODE_X", "CODE_Y") and both.silent is True
    with pytest.raises(ToolError, match=r"^f.yaml: signatures\[0\]\.pattern: "):  # no line map
        parse_signatures(_doc({**GOOD, "example": "no"}), "f.yaml")
