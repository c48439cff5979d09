"""Log signatures: every quoted symptom of the catalog is recognised; clean logs are not."""

from __future__ import annotations

import re

import pytest
from repo_paths import FIXTURES

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.knowledge import load_codes
from shop_r1_doctor.logscan import (
    extract_fatal,
    extract_traceback,
    load_signatures,
    load_signatures_file,
    scan_log,
    signal_lines,
)

DATA = FIXTURES / "report"
# A copy of ../shared/research/failure-modes.md (the catalog the doctor's codes come from).
CATALOG = DATA / "failure-modes.md"

# Quoted text in the symptom column that is not log output.
NOT_LOG_TEXT = {
    "pip install vllm==X",  # a command; the signature reads pip's "uninstalled torch" lines
    "model_executor",  # an identifier; the signature reads the AttributeError around it
    "import trl",  # a statement; the signature reads DeepSpeed's MissingCUDAException
}
# Catalog rows whose symptom has no quoted text (hangs, OOM "at step 2-3", stalls): they are
# reached through `also` of a broader signature or only by the doctor's snapshot checks.
ROWS_WITHOUT_QUOTES = {
    "FA_CXX11_ABI_WHEEL_MISMATCH",
    "VLLM_WHEEL_NO_SM120",
    "TRL_COLOCATE_MEMORY_BUDGET",
    "TRL_VLLM_GROUP_PORT_IN_USE",
    "NCCL_P2P_HANG_CONSUMER_GPUS",
    "NCCL_CUMEM_WEIGHT_SYNC_MISMATCH",
    "WSL_PINNED_MEMORY_LIMIT",
    "HF_XET_DOWNLOAD_STALL",
}


def catalog_rows() -> list[tuple[str, list[str]]]:
    rows = []
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) >= 6 and re.fullmatch(r"[A-Z0-9_]+", cells[0]):
            rows.append((cells[0], re.findall(r"`([^`]+)`", cells[1])))
    return rows


QUOTES = [(rid, q) for rid, quotes in catalog_rows() for q in quotes if q not in NOT_LOG_TEXT]


def test_catalog_is_complete():
    rows = catalog_rows()
    assert len(rows) == 65
    assert {rid for rid, quotes in rows if not quotes} == ROWS_WITHOUT_QUOTES


@pytest.mark.parametrize(("row", "quote"), QUOTES, ids=[f"{r}:{q[:30]}" for r, q in QUOTES])
def test_each_quoted_symptom_is_recognised_as_its_row(row, quote):
    hits = [s for s in load_signatures() if s.pattern.search(quote)]
    assert any(row in s.codes for s in hits), f"no signature maps {quote!r} to {row}"


def test_every_catalog_row_is_reachable_from_some_signature():
    codes = {c for s in load_signatures() for c in s.codes}
    missing = {rid for rid, _ in catalog_rows()} - codes
    # These two have no log text at all; the doctor's snapshot checks are their only route.
    assert missing == {"NCCL_CUMEM_WEIGHT_SYNC_MISMATCH", "HF_XET_DOWNLOAD_STALL"} - codes


def test_every_signature_code_is_a_doctor_code():
    known = set(load_codes())
    unknown = {c for s in load_signatures() for c in s.codes} - known
    assert unknown == set()


# Lines from the incident logs in ../shared/seeds/ and what they must be recognised as.
# Seed 002 ran on Windows: its environment line travels with the raylet lines, since the
# Windows reading of a raylet crash needs Windows evidence in the log.
SEED_002_ENV = "**Environment**: Windows 11, MINGW64, conda environment `arpo`\n"
INCIDENT_LINES = [
    (
        SEED_002_ENV + "[raylet] *** SIGSEGV received at time=1762934554 ***",
        "RAY_WINDOWS_AGENT_CRASH",
    ),
    (
        SEED_002_ENV + "[raylet] The raylet exited immediately because one Ray agent failed, "
        "agent_name = dashboard_agent",
        "RAY_WINDOWS_AGENT_CRASH",
    ),
    ("(pid=5477) free(): double free detected in tcache 2", "WSL_CUDA_INIT_DOUBLE_FREE"),
    (
        "UnicodeEncodeError: 'gbk' codec can't encode character '\\u2705' in position 0:",
        "WIN_CONSOLE_GBK_ENCODING",
    ),
    (
        "HINT: This error might have occurred since this system does not have Windows Long "
        "Path support enabled.",
        "FA_WINDOWS_LONG_PATH",
    ),
    ("error: unable to create file csrc/x.cpp: Filename too long", "FA_WINDOWS_LONG_PATH"),
    (
        "HTTPSConnectionPool(host='cas-bridge.xethub.hf.co', port=443): Read timed out.",
        "HF_DOWNLOAD_TIMEOUT",
    ),
    (
        "requests.exceptions.ChunkedEncodingError: ('Connection broken: "
        "IncompleteRead(1012406 bytes read, 433945418 more expected)', ...)",
        "HF_DOWNLOAD_TIMEOUT",
    ),
    (
        "ERROR: No matching distribution found for nvidia-nccl-cu12==2.21.5",
        "NCCL_MISSING_ON_WINDOWS",
    ),
    (
        "ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the "
        "package flash_attn seems to be not installed",
        "FA_REQUESTED_NOT_INSTALLED",
    ),
    (
        # seed 004: TRL's vLLM weight sync (PyNcclCommunicator) on one GPU
        "RL crash on NCCL init with PyNcclCommunicator: "
        "\u201cDuplicate GPU detected: rank 1 and rank 0 both on CUDA device\u201d.",
        "TRL_SERVER_MODE_SAME_GPU",
    ),
    ('persistent "no single sample in epoch_iterator" error', "TRAINER_ZERO_STEPS_TINY_DATASET"),
    (
        "[transformers] There seems not to be a single sample in your epoch_iterator, "
        "stopping training at step 0!",
        "TRAINER_ZERO_STEPS_TINY_DATASET",
    ),
    (
        "AssertionError: Expandable segments are not compatible with memory pool.",
        "VLLM_EXPANDABLE_SEGMENTS",
    ),
]


@pytest.mark.parametrize(("line", "code"), INCIDENT_LINES)
def test_incident_lines_are_recognised(line, code):
    assert code in [m.signature.code for m in scan_log(line)]


# Triton 3.9's two raises for a missing toolchain (triton/runtime/build.py:33 for C sources
# such as its launcher, :47 for C++ sources), as a failed run prints them.
TRITON_NO_COMPILER_LINES = [
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable or set "
    "triton.knobs.build.impl.",
    "RuntimeError: Failed to find C++ compiler. Please specify via CXX environment variable or "
    "set triton.knobs.build.impl.",
]


@pytest.mark.parametrize("line", TRITON_NO_COMPILER_LINES, ids=["c", "cxx"])
def test_triton_no_compiler_is_read_in_both_wordings(line):
    matches = scan_log(line)
    assert [(m.signature.id, m.signature.code) for m in matches] == [
        ("triton-no-c-compiler", "TORCH_COMPILE_NO_COMPILER")
    ]


def test_real_tiny_dataset_run_is_recognised_and_marked_silent():
    # Recorded from tests/fixtures/report/tiny_grpo.py with 1 row: exit 0, no step trained.
    matches = scan_log((DATA / "grpo_tiny_dataset_cpu.log").read_text(encoding="utf-8"))
    assert [m.signature.code for m in matches] == ["TRAINER_ZERO_STEPS_TINY_DATASET"]
    assert matches[0].signature.silent
    assert matches[0].line_no == 4


def test_no_signature_matches_a_clean_training_log():
    # Recorded from tests/fixtures/report/tiny_grpo.py with 8 rows (2 GRPO steps, exit 0).
    clean = (DATA / "clean_grpo_cpu.log").read_text(encoding="utf-8")
    assert scan_log(clean) == []
    assert extract_traceback(clean) is None
    assert signal_lines(clean) == []


def test_no_signature_matches_its_neighbours_clean_text():
    # Words the patterns look for, in harmless sentences.
    clean = "\n".join(
        [
            "Loading checkpoint shards: 100%|##########| 2/2",
            "flash_attn 2.8.3 imported; using flash_attention_2",
            "kernel image cache warmed",
            "Killed 0 stale processes",
            "Server is up!",
            "No module named 'foo' (optional plugin skipped)",
            "numpy 2.2.6, opencv-python-headless 4.11.0.86",
            "{'loss': 1.23, 'grad_norm': 0.5, 'epoch': 1.0}",
        ]
    )
    assert scan_log(clean) == []


TRACEBACK_LOG = """\
[12:00:00.001] Loading model
[12:00:01.002] Traceback (most recent call last):
[12:00:01.002]   File "train.py", line 3, in <module>
[12:00:01.002]     import flash_attn
[12:00:01.003] ImportError: first failure
[12:00:02.000] retrying
[rank0]: Traceback (most recent call last):
[rank0]:   File "/x/train.py", line 9, in main
[rank0]:     trainer.train()
[rank0]:   File "/x/trl/trainer.py", line 99, in train
[rank0]:     raise ValueError(
[rank0]: ValueError: The global train batch size (7 x 1) must be evenly divisible by the number of generations per prompt (8).
[rank0]: Valid values for the per-device train batch size are: [4, 8].
[rank0]:
[12:00:03.000] INFO shutting down
"""


def test_last_traceback_is_extracted_without_prefixes():
    tb = extract_traceback(TRACEBACK_LOG)
    assert tb == (
        "Traceback (most recent call last):\n"
        '  File "/x/train.py", line 9, in main\n'
        "    trainer.train()\n"
        '  File "/x/trl/trainer.py", line 99, in train\n'
        "    raise ValueError(\n"
        "ValueError: The global train batch size (7 x 1) must be evenly divisible by the "
        "number of generations per prompt (8).\n"
        "Valid values for the per-device train batch size are: [4, 8]."
    )
    assert [m.signature.code for m in scan_log(TRACEBACK_LOG)] == ["TRL_GRPO_BATCH_NOT_DIVISIBLE"]


FATAL_LOG = """\
Started a local Ray instance. View the dashboard at 127.0.0.1:8265
(pid=5477) free(): double free detected in tcache 2
(pid=5477) *** SIGABRT received at time=1762938208 on cpu 11 ***
Fatal Python error: Aborted

Stack (most recent call first):
  File "torch/cuda/__init__.py", line 174 in is_available
  File "tensordict/base.py", line 135 in <module>
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task
"""


def test_fatal_error_block_and_signal_lines():
    assert extract_fatal(FATAL_LOG) == (
        "Fatal Python error: Aborted\n\n"
        "Stack (most recent call first):\n"
        '  File "torch/cuda/__init__.py", line 174 in is_available\n'
        '  File "tensordict/base.py", line 135 in <module>'
    )
    assert signal_lines(FATAL_LOG) == [
        "free(): double free detected in tcache 2",
        "*** SIGABRT received at time=1762938208 on cpu 11 ***",
    ]
    assert extract_traceback(FATAL_LOG) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("schema: nope\nsignatures: []\n", "schema: expected 'shop-r1.log-signatures/1'"),
        ("schema: shop-r1.log-signatures/1\nsignatures: []\n", "non-empty list"),
        (
            "schema: shop-r1.log-signatures/1\nsignatures:\n  - id: a\n",
            ":3: signatures[0].code: missing",
        ),
        (
            "schema: shop-r1.log-signatures/1\nsignatures:\n"
            "  - {id: a, code: X_Y, pattern: '(', title: t, try: t, source: 'https://x', example: e}\n",
            ":3: signatures[0].pattern: not a valid regex",
        ),
        (
            "schema: shop-r1.log-signatures/1\nsignatures:\n"
            "  - {id: a, code: X_Y, pattern: 'foo', title: t, try: t, source: 'https://x', example: e}\n",
            "does not match its own example",
        ),
        (
            "schema: shop-r1.log-signatures/1\nsignatures:\n"
            "  - {id: a, code: x, pattern: 'e', title: t, try: t, source: 'https://x', example: e}\n",
            "not an UPPER_SNAKE",
        ),
        (
            "schema: shop-r1.log-signatures/1\nsignatures:\n"
            "  - {id: a, code: X, pattern: 'e', title: t, try: t, source: 'https://x', example: e, colour: red}\n",
            "signatures[0].colour: unknown field",
        ),
        ("schema: [unclosed\n", "not valid YAML"),
    ],
)
def test_malformed_signature_file_names_file_and_entry(tmp_path, body, message):
    path = tmp_path / "sigs.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(ToolError) as err:
        load_signatures_file(path)
    assert str(path) in str(err.value)
    assert message in str(err.value)
