"""The environment a reporter pastes beside a GPU failure (tests/fixtures/faults/gpu/
<case>.env.txt: collect_env, nvidia-smi and pip list, recorded in the case's environment
after it failed): the doctor reads it, and `report --log LOG --from ENV` joins what it
finds to the log's readings as benchmarks/faults_corpus.py --environment measures."""

from __future__ import annotations

import shlex

import pytest
from repo_paths import load_script

from shop_r1_doctor.ingest import snapshot_from_dump

from .suite import load_recordings

corpus = load_script("benchmarks/faults_corpus.py")

PASTED = [r for r in load_recordings(families=("gpu",)) if r.environment.strip()]


def _hides_gpus(command: str) -> bool:
    """The recorded command runs with a CUDA_VISIBLE_DEVICES that leaves torch no GPU
    (empty, an index past this one-GPU machine, or a UUID no GPU has)."""
    for word in shlex.split(command):
        if word.startswith("CUDA_VISIBLE_DEVICES="):
            return word.split("=", 1)[1] not in ("0", "GPU-0")
    return False


def test_the_pasted_environments_are_recorded():
    assert len(PASTED) >= 10
    assert sum(not r.expected for r in PASTED) >= 2  # user bugs among them


@pytest.mark.parametrize("rec", PASTED, ids=lambda r: r.case)
def test_each_pasted_environment_reads_as_the_machine_it_ran_on(rec):
    snap = snapshot_from_dump(rec.environment, f"{rec.case}.env.txt")
    parsers = {p["parser"] for p in snap["source"]["parts"]}
    assert parsers >= {"collect_env", "nvidia_smi", "pip_list"}
    [gpu] = snap["gpus"]
    assert gpu["name"] in rec.meta["versions"]["gpu"] and gpu["compute_capability"] == "9.0"
    assert snap["driver"]["version"] == rec.meta["versions"]["nvidia_driver"]
    assert snap["torch"]["version"].split("+")[0] == rec.meta["versions"]["torch"]
    # collect_env ran with the case's variables: torch saw no GPU where they hid it
    assert snap["torch"]["cuda_available"] is not _hides_gpus(rec.meta["command"])
    assert snap["packages"]["transformers"]["version"] == rec.meta["versions"]["transformers"]


def _compare(*names: str) -> dict[str, dict]:
    cases = corpus.load_cases(("gpu",), {f"gpu/{n}" for n in names}, with_environment=True)
    assert {c.id for c in cases} == set(names)
    rows = corpus.environment_comparison(cases)["outcomes"]
    return {row["case"].split("/", 1)[1]: row for row in rows}


def test_the_join_as_measured_on_two_cases_and_a_user_bug():
    rows = _compare("gpus_hidden_to_cuda", "context_on_full_gpu", "user_tensor_left_on_cpu")
    # GPUs hidden: the log alone names CUDA_VISIBLE_DEVICES at info level; collect_env's
    # "Is CUDA available: False" beside nvidia-smi's H100 is the doctor's
    # TORCH_CUDA_UNAVAILABLE, which the variable explains: one cause, at error level
    hidden = rows["gpus_hidden_to_cuda"]
    assert hidden["environment_read"]
    assert hidden["log"]["recognised"] == ["CUDA_VISIBLE_DEVICES_HIDES_GPUS"]
    assert hidden["log"]["severities"] == ["info"]
    joined = hidden["log_and_environment"]
    assert joined["recognised"] == ["CUDA_VISIBLE_DEVICES_HIDES_GPUS"]
    assert joined["severities"] == ["error"]
    # another process fills the GPU: only nvidia-smi's process list shows it
    full = rows["context_on_full_gpu"]
    assert full["log"]["recognised"] == ["GPU_OUT_OF_MEMORY"]
    assert full["log_and_environment"]["recognised"] == [
        "GPU_OUT_OF_MEMORY",
        "GPU_BUSY_OTHER_PROCESSES",
    ]
    assert full["log_and_environment"]["severities"] == ["error", "warning"]
    assert full["log_and_environment"]["expected_named"] == 2
    # the user's own bug on a healthy machine: the environment adds no claim
    user = rows["user_tensor_left_on_cpu"]
    assert user["environment_read"] and user["log_and_environment"]["recognised"] == []
