"""The signatures keep reading the frameworks' environment messages: the family signatures
find each message they cite as a log shows it, and the coverage measured by
benchmarks/signature_coverage.py does not fall below any figure recorded in
benchmarks/results/signature_coverage_after*.json (one file per round of signatures)."""

from __future__ import annotations

import json

import pytest
from repo_paths import ROOT, load_script

from shop_r1_doctor.framework_messages import load_messages
from shop_r1_doctor.logscan import load_signatures, scan_log

RECORDED = sorted((ROOT / "benchmarks" / "results").glob("signature_coverage_after*.json"))

# Signatures written from the frameworks' message families (one pattern per family).
# Not rendezvous-connect-failed: it reads NCCL's connect message only with the errnos that
# show a network fault (a placeholder filled with a timeout is no evidence of one).
FAMILY_SIGNATURES = (
    "optional-package-not-installed",
    "deepspeed-not-installed-accelerate",
    "torch-compiled-without-cuda",
    "cuda-not-usable",
    "gpu-too-old-for-feature",
    "cudnn-version-mismatch",
    "nccl-version-mismatch",
    "local-rank-exceeds-visible",
    "ray-no-running-instance",
    "ray-version-mismatch",
    "ray-port-taken",
    "ray-object-store-exceeds-shm",
    "hf-offline-no-cache",
    "hf-token-missing",
    "package-refuses-installed-version",
    "required-package-not-installed-version-check",
    "export-not-enough-disk",
    "model-does-not-fit-gpu-unsloth",
)


@pytest.fixture(scope="module")
def coverage():
    return load_script("benchmarks/signature_coverage.py")


@pytest.fixture(scope="module")
def figures(coverage):
    sigs = load_signatures()
    return coverage.summary(coverage.measure(sigs), len(sigs))


@pytest.mark.parametrize("sig_id", FAMILY_SIGNATURES)
def test_family_signature_reads_every_message_it_cites(coverage, sig_id):
    """Not only its example: each cited message, placeholders filled as a log fills
    them, is found by the pattern (a pattern narrowed to one of the wordings it cites
    fails here)."""
    sig = next(s for s in load_signatures() if s.id == sig_id)
    cited = [c for c in sig.printed_by if c.package]
    assert cited, f"{sig_id} cites no framework message"
    for c in cited:
        assert c.package and c.version
        [msg] = [m for m in load_messages(c.package, c.version) if m.at == c.at][:1]
        assert any(sig.pattern.search(t) for t in coverage._renderings(msg)), (sig_id, c.at)


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_coverage_does_not_fall_below_the_recorded_figure(figures, path):
    recorded = json.loads(path.read_text())
    assert figures["likely"]["covered"] >= recorded["likely"]["covered"]
    for family, fig in recorded["by_family"].items():
        assert figures["by_family"][family]["likely"]["covered"] >= fig["likely"]["covered"], family


def test_environment_families_have_a_floor(figures):
    """Absolute floors on the likely messages (raise/error, naming an environment fact),
    so rewriting the recorded figure cannot hide a loss: at least a third of the install
    family and a tenth overall are read."""
    assert figures["likely"]["coverage"] >= 0.14
    assert figures["by_family"]["install"]["likely"]["coverage"] >= 0.33
    for family in ("gpu", "distributed", "memory", "disk", "compiler"):
        assert figures["by_family"][family]["likely"]["coverage"] >= 0.09, family


def test_missing_package_is_read_from_a_raise_not_from_a_hint():
    raised = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ImportError: You passed `peft_config` but the `peft` library is not installed. "
        "Install it with `pip install trl[peft]`.\n"
    )
    hint = (
        "UserWarning: flash-linear-attention is not installed, the fast path is off. "
        "For it, `pip install flash-linear-attention`.\n"
        "{'loss': 1.23, 'epoch': 1.0}\n"
    )
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" in [m.signature.code for m in scan_log(raised)]
    assert [m.signature.code for m in scan_log(hint)] == []


def test_benign_c10d_retry_line_is_no_network_failure():
    """torch prints this [W] line while the rendezvous retries, in runs that then work."""
    retry = (
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to "
        "[localhost]:29500 (errno: 99 - Cannot assign requested address).\n"
    )
    gave_up = (
        "torch.distributed.DistStoreError: The client socket has timed out after 1800s "
        "while trying to connect to (10.0.0.1, 29500).\n"
    )
    assert [m.signature.code for m in scan_log(retry)] == []
    # giving up after the timeout names no cause from the text alone (a main rank still
    # preparing data does it on one healthy node); causes.py reads it as a hint
    assert [m.signature.code for m in scan_log(gave_up)] == []
    aborted = (
        "socket.c:485 NCCL WARN socketStartConnect: Connect to 10.0.0.82<38455> failed : "
        "Software caused connection abort\n"
    )
    assert [m.signature.code for m in scan_log(aborted)] == ["NODE_NETWORK_UNREACHABLE"]
