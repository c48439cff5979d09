"""pip's `(from versions: ...)` read by direction (a pin older than every offered version,
torch asked above its last macOS x86_64 wheels), a model name that is no folder and no
Hub repo, and safetensors' HeaderTooLarge under a bare `load_file` frame: each read from
the message its framework prints (codes and severities only; wording: codes.yaml)."""

from __future__ import annotations

import random

import pytest
from logscan_readings import codes, errors, lead

PIP = "ERROR: Could not find a version that satisfies the requirement {req} (from versions: {offered})"


# --- PYTHON_TOO_NEW_FOR_PACKAGE: a pin older than every version pip offers -------------


@pytest.mark.parametrize(
    ("req", "offered"),
    [
        # torch 1.13.1 has no cp311 wheel: Python 3.11 is offered 2.0.0 and later
        ("torch==1.13.1", "2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.3.0, 2.4.0, 2.4.1"),
        # a +cu pin through torch_stable.html, whose list mixes local versions
        ("torch==2.1.0+cu121", "2.2.0, 2.2.0+cpu, 2.2.0+cu118, 2.2.0+cu121, 2.2.1, 2.5.1, 2.6.0"),
        ("numpy==1.21.0", "1.26.0, 1.26.4, 2.0.0"),
        ("numpy===1.21.0", "1.26.0"),
        ("vllm[audio]==0.2.7", "0.10.0, 0.10.1"),  # 2 below 10: a number, not a string
        ("pkg==9.0", "10.0, 11.0"),  # fewer digits
        ("pkg==2.9.1", "2.10.0, 2.11.0"),
        ("pkg==1.2", "1.2.1, 1.3"),  # 1.2 is 1.2.0
        ("pkg==2024.1.0", "2024.10.0"),
    ],
)
def test_a_pin_older_than_every_offered_version_is_a_python_newer_than_the_release(req, offered):
    log = (
        PIP.format(req=req, offered=offered) + f"\nERROR: No matching distribution found for {req}"
    )
    assert lead(log) == ("PYTHON_TOO_NEW_FOR_PACKAGE", "info")
    # and not the other direction as well
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in codes(log)
    assert errors(log) == []


def test_the_torch_stable_page_form_reads_the_same():
    log = (
        "pip install torch==2.1.0+cu121 -f https://download.pytorch.org/whl/torch_stable.html\n"
        "Looking in links: https://download.pytorch.org/whl/torch_stable.html\n"
        + PIP.format(req="torch==2.1.0+cu121", offered="2.2.0, 2.2.0+cpu, 2.2.0+cu121, 2.6.0")
    )
    assert lead(log) == ("PYTHON_TOO_NEW_FOR_PACKAGE", "info")


@pytest.mark.parametrize(
    ("req", "offered"),
    [
        ("click==8.2.1", "8.1.7, 8.1.8"),  # above every one: a release for a newer Python
        ("numpy==1.26.3", "1.26.0, 1.26.4"),  # inside the range
        ("pkg==2.10.0", "2.9.0, 2.9.1"),  # 10 above 9, though "1" < "9" as text
        ("pkg==10.0", "9.0, 9.1"),
        ("pkg==2.1.0", "2.1.0+cpu, 2.2.0"),  # the same release, another local tag
        ("pkg==2.1", "2.1.0, 2.2.0"),  # 2.1 is 2.1.0
        ("pkg==0.0.9", "0.0.9"),
        ("torch==1.13.1", "none"),
    ],
)
def test_a_pin_not_below_every_offered_version_is_not_read_as_a_newer_python(req, offered):
    assert "PYTHON_TOO_NEW_FOR_PACKAGE" not in codes(PIP.format(req=req, offered=offered))


def _release(v: str) -> tuple[int, ...]:
    t = [int(x) for x in v.split(".")]
    return tuple(t + [0] * (4 - len(t)))


def test_the_direction_follows_the_numbers_not_the_text():
    # pairs of versions whose components differ in their digit counts and first digits
    rng = random.Random(7)
    parts = [0, 1, 2, 3, 9, 10, 11, 19, 20, 99, 100, 101, 2024]
    wrong = []
    for _ in range(150):
        pin = ".".join(str(rng.choice(parts)) for _ in range(rng.randint(1, 3)))
        first = ".".join(str(rng.choice(parts)) for _ in range(rng.randint(1, 3)))
        log = PIP.format(req=f"pkg=={pin}", offered=f"{first}, 99999.0")
        if ("PYTHON_TOO_NEW_FOR_PACKAGE" in codes(log)) != (_release(pin) < _release(first)):
            wrong.append((pin, first))
    assert wrong == []


# --- NO_RELEASE_FOR_THIS_PLATFORM: torch above its last macOS x86_64 wheels --------------

_INTEL_MAC = (
    "1.11.0, 1.12.0, 1.12.1, 1.13.0, 1.13.1, 2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.1.2, 2.2.0, 2.2.1, 2.2.2"
)


@pytest.mark.parametrize("req", ["torch==2.5.1", "torch==2.4", "torch>=2.3.0", "torch==2.10.0"])
def test_torch_above_2_2_2_where_the_list_stops_there_is_the_platform(req):
    log = (
        PIP.format(req=req, offered=_INTEL_MAC)
        + f"\nERROR: No matching distribution found for {req}"
    )
    assert lead(log) == ("NO_RELEASE_FOR_THIS_PLATFORM", "warning")
    assert errors(log) == []


@pytest.mark.parametrize(
    ("req", "offered"),
    [
        ("torch==2.5.1", "1.13.1, 2.0.0, 2.4.0, 2.4.1"),  # Python 3.8's list ends at 2.4.1
        ("torch==2.5.1", "2.2.1, 2.2.2, 2.3.0"),  # the list runs on past 2.2.2
        ("torch==2.1.5", _INTEL_MAC),  # not above 2.2.2
        ("torchvision==2.5.1", _INTEL_MAC),
    ],
)
def test_a_list_that_does_not_stop_below_the_pin_at_2_2_2_is_not_the_platform(req, offered):
    assert "NO_RELEASE_FOR_THIS_PLATFORM" not in codes(PIP.format(req=req, offered=offered))


# --- MODEL_PATH_NOT_FOUND ----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # transformers 4.3x-4.4x's wrapper of the repo-id validator's refusal
        "OSError: Incorrect path_or_model_id: '/mnt/data/u/code/bert-base-uncased'. Please provide"
        " either the path to a local folder or the repo_id of a model on the Hub.",
        "OSError: Incorrect path_or_model_id: 'C:\\models\\qwen'. Please provide either the path"
        " to a local folder or the repo_id of a model on the Hub.",
        "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name':"
        " '/data/ckpt/sft-final'. Use `repo_type` argument if needed.",
    ],
)
def test_a_name_that_can_only_be_a_path_and_is_no_folder_is_an_error(log):
    assert lead(log) == ("MODEL_PATH_NOT_FOUND", "error")


@pytest.mark.parametrize(
    "log",
    [
        "OSError: decapoda-research/llama-7b-hf is not a local folder and is not a valid model"
        " identifier listed on 'https://huggingface.co/models'\nIf this is a private repository,"
        " make sure to pass a token having permission to this repo either by logging in with"
        " `hf auth login` or by passing `token=<your_token>`",
        # the line alone, without the OSError prefix
        "google/siglip-so400m-patch14-384 is not a local folder and is not a valid model"
        " identifier listed on 'https://huggingface.co/models'",
        # transformers 5's has_file
        "OSError: output/checkpoint-500 is not a local folder or a valid repository name on"
        " 'https://hf.co'.",
    ],
)
def test_a_hub_id_the_hub_does_not_show_is_only_a_hint(log):
    # a relative folder that is not there, a removed repo, a private one and a typo read alike
    assert lead(log) == ("MODEL_PATH_NOT_FOUND", "info")
    assert errors(log) == []


@pytest.mark.parametrize(
    "log",
    [
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't"
        " find them in the cached files.",
        "ValueError: Incorrect path to the dataset: data/train.json",
        "OSError: Qwen/Qwen2.5-7B does not appear to have a file named config.json. Checkout"
        " 'https://huggingface.co/Qwen/Qwen2.5-7B/tree/main' for available files.",
    ],
)
def test_other_hub_and_path_messages_are_not_a_missing_model_path(log):
    assert "MODEL_PATH_NOT_FOUND" not in codes(log)


# --- CHECKPOINT_NOT_WEIGHTS under a bare load_file frame ----------------------------------

_HEADER = "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"


def test_header_too_large_under_safetensors_load_file_frame_is_not_weights():
    # a paste that starts mid-frame: no path, only safetensors.torch.load_file's frame
    log = (
        ', line 313, in load_file\n    with safe_open(filename, framework="pt", device=device)'
        " as f:\n         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" + _HEADER
    )
    assert lead(log) == ("CHECKPOINT_NOT_WEIGHTS", "warning")


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/home/user/feats.py", line 12, in load_files\n    with safe_open(p, "pt") as f:\n',
        '  File "/home/user/feats.py", line 12, in read_features\n    x = load(p)\n',
    ],
)
def test_header_too_large_in_a_users_own_reader_is_not_read(frame):
    assert "CHECKPOINT_NOT_WEIGHTS" not in codes(frame + _HEADER)
