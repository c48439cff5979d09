"""Readings of a Docker engine out of reach, a full /dev/shm, pip's refusals (a release for a
newer Python, a wheel for another one, a resolver conflict), Ray's runtime (a driver of
another release, a GCS that cannot start, an object store out of disk) and a partial Hub
cache (a missing shard, an empty tokenizer), on text shapes beyond the recordings in
tests/fixtures/faults/. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings


def errors(text: str) -> list[str]:
    return [c for c, s in readings(text) if s == "error"]


# --- DOCKER_ENGINE_UNREACHABLE ----------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
        " Is the docker daemon running?\n\nRun 'docker run --help' for more information",
        "Cannot connect to the Docker daemon at unix:///Users/me/.docker/run/docker.sock."
        " Is the docker daemon running?",
        "Cannot connect to the Docker daemon at tcp://10.0.0.5:2376. Is the docker daemon running?",
        "Cannot connect to the Docker daemon. Is the docker daemon running on this host?",
        "permission denied while trying to connect to the Docker daemon socket at"
        ' unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.49/containers/json":'
        " dial unix /var/run/docker.sock: connect: permission denied",
    ],
)
def test_the_cli_without_an_engine_is_named(log):
    assert readings(log)[0] == ("DOCKER_ENGINE_UNREACHABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        "Client: Docker Engine - Community\n Version: 28.2.2\nServer: Docker Engine - Community\n"
        " Engine:\n  Version: 28.2.2",
        "INFO: connected to the Docker daemon at unix:///var/run/docker.sock",
        "docker: Error response from daemon: No such image: shop-r1/base:1.",
    ],
)
def test_an_engine_that_answers_is_not_unreachable(log):
    assert "DOCKER_ENGINE_UNREACHABLE" not in codes(log)


# --- CONTAINER_SHM_TOO_SMALL ------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "dd: error writing '/dev/shm/x': No space left on device\n1+0 records out",
        "OSError: [Errno 28] No space left on device: '/dev/shm/cache/shard-0003.arrow'",
        "cp: error writing '/dev/shm/data/train.bin': No space left on device",
        "/bin/sh: 1: cannot create /dev/shm/lock: No space left on device",
    ],
)
def test_a_full_dev_shm_is_named(log):
    assert readings(log)[0] == ("CONTAINER_SHM_TOO_SMALL", "error")


@pytest.mark.parametrize(
    "log",
    [
        # a disk, not /dev/shm
        "OSError: [Errno 28] No space left on device: '/data/out/checkpoint-500/model.safetensors'",
        # NCCL's and torch's own /dev/shm writers have their own codes
        "include/shm.h:48 NCCL WARN Error while creating shared memory segment"
        " /dev/shm/nccl-abc123 (size 9637888)",
        "RuntimeError: unable to write to file </torch_123_456_0>: No space left on device (28)",
        "ls /dev/shm/\nsem.mp-1 nccl-xyz",
    ],
)
def test_other_writers_and_disks_are_not_the_container_shm(log):
    assert "CONTAINER_SHM_TOO_SMALL" not in codes(log)


# --- PYTHON_TOO_OLD_FOR_PACKAGE ---------------------------------------------------------

_IGNORED = (
    "ERROR: Ignored the following versions that require a different python version:"
    " 1.21.2 Requires-Python >=3.7,<3.11; 1.21.6 Requires-Python >=3.7,<3.11;"
    " 2.5.0 Requires-Python >=3.12; 2.5.1 Requires-Python >=3.12\n"
)


@pytest.mark.parametrize(
    "log",
    [
        _IGNORED + "ERROR: Could not find a version that satisfies the requirement numpy==2.5.1"
        " (from versions: 1.26.4, 2.4.6)\nERROR: No matching distribution found for numpy==2.5.1",
        "ERROR: Ignored the following versions that require a different python version:"
        " 0.7.0 Requires-Python >=3.9\n"
        "ERROR: Could not find a version that satisfies the requirement vllm[audio]==0.7.0"
        " (from versions: 0.1.0)\nERROR: No matching distribution found for vllm[audio]==0.7.0",
        "ERROR: Package 'trl' requires a different Python: 3.8.10 not in '>=3.9'",
        "ERROR: Packages require a different Python. 3.9.18 not in:\n'>=3.10' (required by a)",
    ],
)
def test_a_release_for_a_newer_python_is_named(log):
    assert readings(log)[0] == ("PYTHON_TOO_OLD_FOR_PACKAGE", "error")


@pytest.mark.parametrize("req", ["numpy>=2.5", "numpy~=2.5.0", "numpy"])
def test_a_range_no_release_meets_is_only_a_hint(req):
    # some releases were skipped for their Python; the range may want them, or none may exist
    log = (
        _IGNORED + f"ERROR: Could not find a version that satisfies the requirement {req}"
        f" (from versions: none)\nERROR: No matching distribution found for {req}"
    )
    assert readings(log)[0] == ("PYTHON_TOO_OLD_FOR_PACKAGE", "info")
    assert errors(log) == []


def test_a_pinned_version_pip_did_not_skip_is_not_the_python():
    # pip lists the releases it skipped for their Python, but the pin is none of them
    log = (
        _IGNORED + "ERROR: Could not find a version that satisfies the requirement numpy==2.5"
        " (from versions: 1.26.4, 2.4.6)\nERROR: No matching distribution found for numpy==2.5"
    )
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(log)


def test_no_match_without_versions_ignored_for_python_is_not_the_python():
    log = (
        "ERROR: Could not find a version that satisfies the requirement torch==2.13.0+cu999"
        " (from versions: 2.12.0, 2.13.0)\nERROR: No matching distribution found for"
        " torch==2.13.0+cu999"
    )
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(log)


# --- WHEEL_NOT_FOR_THIS_PYTHON ----------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ERROR: MarkupSafe-3.0.2-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
        " is not a supported wheel on this platform.",
        "ERROR: flash_attn-2.8.3+cu12torch2.7cxx11abiTRUE-cp310-cp310-linux_x86_64.whl is not"
        " a supported wheel on this platform.",
        "ERROR: C:\\wheels\\xformers-0.0.29-cp311-cp311-manylinux_2_28_aarch64.whl is not a"
        " supported wheel on this platform.",
    ],
)
def test_a_wheel_for_another_python_or_platform_is_named(log):
    assert readings(log)[0] == ("WHEEL_NOT_FOR_THIS_PYTHON", "error")


def test_pip_skipping_incompatible_links_while_searching_is_no_failure():
    log = (
        "  Skipping link: none of the wheel's tags (cp312-cp312-manylinux_2_17_x86_64) are"
        " compatible (run pip debug --verbose to show compatible tags):"
        " https://files.pythonhosted.org/packages/MarkupSafe-3.0.2-cp312-cp312-manylinux.whl\n"
        "Successfully installed MarkupSafe-3.0.2"
    )
    assert "WHEEL_NOT_FOR_THIS_PYTHON" not in codes(log)


# --- REQUIREMENT_CONFLICT (pip's resolver) ----------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ERROR: Cannot install transformers==4.30.0 and trl==1.16.0 because these package"
        " versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
        "    The user requested transformers==4.30.0\n"
        "    trl 1.16.0 depends on transformers>=4.56.2",
        "ERROR: Cannot install -r requirements.txt (line 3), -r requirements.txt (line 7) and"
        " vllm==0.26.0 because these package versions have conflicting dependencies.",
        "ERROR: ResolutionImpossible: for help visit"
        " https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts",
    ],
)
def test_pips_resolver_conflict_is_named(log):
    assert readings(log)[0][0] == "REQUIREMENT_CONFLICT"


def test_pip_backtracking_is_not_a_conflict():
    log = (
        "INFO: pip is looking at multiple versions of trl to determine which version is"
        " compatible with other requirements. This could take a while.\n"
        "Successfully installed trl-1.16.0"
    )
    assert "REQUIREMENT_CONFLICT" not in codes(log)


# --- RAY_VERSION_MISMATCH (a driver of another release) ---------------------------------


def test_a_driver_that_cannot_read_the_gcs_is_a_version_hint():
    log = (
        "INFO worker.py:1636 -- Connecting to existing Ray cluster at address: 10.0.0.2:6379...\n"
        "ConnectionError: Could not read 'session_name' from GCS. Did GCS start successfully?"
    )
    assert readings(log)[0] == ("RAY_VERSION_MISMATCH", "warning")


def test_a_gcs_that_does_not_answer_is_not_a_version_mismatch():
    log = (
        "rpc_client.h:153: Failed to connect to GCS at address 10.0.0.2:6379 within 5 seconds.\n"
        "ConnectionError: Failed to connect to Ray cluster at 10.0.0.2:6379"
    )
    assert "RAY_VERSION_MISMATCH" not in codes(log)


# --- RAY_TMP_DISK_FULL ------------------------------------------------------------------


def test_a_gcs_that_left_no_log_line_leads_over_the_connect_failures():
    log = (
        "rpc_client.h:153: Failed to connect to GCS at address 10.0.0.2:29541 within 5 seconds.\n"
        "gcs_client.cc:210: Failed to get cluster ID from GCS server: TimedOut: Timed out\n"
        "RuntimeError: Failed to start GCS.  Last 0 lines of error files:\n\n"
        ".Please check /tmp/ray/session_x/logs/gcs_server.out for details."
    )
    assert readings(log)[0] == ("RAY_TMP_DISK_FULL", "warning")


def test_a_gcs_that_logged_its_error_is_not_read_as_a_full_disk():
    # the error lines name the cause (here a glibc too old for Ray's binary)
    log = (
        "RuntimeError: Failed to start GCS.  Last 1 lines of error files:\n"
        "gcs_server: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found\n"
    )
    assert "RAY_TMP_DISK_FULL" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "(raylet) dlmalloc.cc:204: Out of disk space with fallocate error: No space left on device\n"
        "ray.exceptions.OutOfDiskError: Local disk is full\nThe object cannot be created because"
        " the local object store is full and the local disk's utilization is over capacity"
        " (95% by default).",
        "[2026-01-02 10:00:00,000 E 1 2] (raylet) object_lifecycle_manager.cc:221: Plasma"
        " fallback allocator failed, likely out of disk space.",
    ],
)
def test_the_object_store_out_of_disk_leads_over_the_bare_enospc(log):
    assert readings(log)[0] == ("RAY_TMP_DISK_FULL", "error")


def test_an_object_store_fallback_that_worked_is_no_failure():
    log = (
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only"
        " 67108864 bytes available."
    )
    assert "RAY_TMP_DISK_FULL" not in codes(log)


# --- HF_DOWNLOAD_INCOMPLETE (a shard missing) -------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "OSError: Qwen/Qwen2.5-7B does not appear to have a file named"
        " model-00003-of-00004.safetensors. Checkout"
        " 'https://huggingface.co/Qwen/Qwen2.5-7B/tree/main' for available files.",
        "OSError: /models/llama does not appear to have a file named"
        " pytorch_model-00002-of-00002.bin. Checkout"
        " 'https://huggingface.co//models/llama/tree/main' for available files.",
        "OSError: org/m does not appear to have files named ('model-00001-of-00002.safetensors',"
        " 'model-00002-of-00002.safetensors'). Checkout"
        " 'https://huggingface.co/org/m/tree/main' for available files.",
    ],
)
def test_a_shard_the_index_lists_missing_is_an_incomplete_download(log):
    assert readings(log)[0] == ("HF_DOWNLOAD_INCOMPLETE", "error")


def test_a_non_shard_file_missing_is_not_an_incomplete_download():
    log = (
        "OSError: gpt2 does not appear to have a file named preprocessor_config.json. Checkout"
        " 'https://huggingface.co/gpt2/tree/main' for available files."
    )
    assert "HF_DOWNLOAD_INCOMPLETE" not in codes(log)


# --- TOKENIZER_FILES_MISSING ------------------------------------------------------------


@pytest.mark.parametrize("shape", ["[1, 0, -1, 16]", "[4, 0, -1, 128]"])
def test_a_sequence_of_no_tokens_is_a_tokenizer_hint(shape):
    log = (
        f"RuntimeError: cannot reshape tensor of 0 elements into shape {shape} because the"
        " unspecified dimension size -1 can be any value and is ambiguous"
    )
    assert readings(log)[0] == ("TOKENIZER_FILES_MISSING", "warning")


@pytest.mark.parametrize("shape", ["[0, -1, 16]", "[0, 12, -1, 64]", "[-1, 0]"])
def test_other_empty_reshapes_are_not_an_empty_tokenizer(shape):
    # an empty batch, not a sequence of no tokens
    log = (
        f"RuntimeError: cannot reshape tensor of 0 elements into shape {shape} because the"
        " unspecified dimension size -1 can be any value and is ambiguous"
    )
    assert "TOKENIZER_FILES_MISSING" not in codes(log)


# --- a Ray head whose own GCS never answered (recorded: a 1 MB tmpfs as --temp-dir) ------

HEAD_START = (
    "2026-11-27 03:46:57,560\tINFO usage_lib.py:448 -- Usage stats collection is disabled.\n"
    "2026-11-27 03:46:57,561\tINFO scripts.py:1043 -- Local node IP: 192.0.2.2\n"
)
GCS_GONE = (
    "[2026-11-27 03:47:57,727 E 26805 26807] rpc_client.h:204: Failed to connect to GCS within"
    " 60 seconds. GCS may have been killed. It's either GCS is terminated by `ray stop` or is"
    " killed unexpectedly.\n"
)


def test_a_heads_own_gcs_that_never_answered_is_a_hint_of_its_temp_dir():
    assert readings(HEAD_START + GCS_GONE) == [("RAY_TMP_DISK_FULL", "warning")]


def test_a_gcs_not_answering_a_client_is_the_cluster_not_the_temp_dir():
    assert codes(GCS_GONE) == ["RAY_CLUSTER_UNREACHABLE"]
