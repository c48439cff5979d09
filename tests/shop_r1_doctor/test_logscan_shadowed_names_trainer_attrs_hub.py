"""Readings for a name every release of a package exports failing to import (another
module of that name took the package's place), a trainer lacking an attribute the stack's
trainers set in some releases only (a subclass written for another release),
huggingface_hub's retry line for HTTP 429, and diffusers' "not cached locally and an
error occurred while trying to fetch metadata" (a missing repo or an unreachable Hub).
Each on the framework's wording and a pasted shape, with a near miss that must not be
read. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

# --- a long-standing name missing from the package: a shadowing module --------------


@pytest.mark.parametrize(
    "log",
    [
        # the paste cut the location (OpenRLHF under a Ray working_dir)
        "ImportError: cannot import name 'interleave_datasets' from 'datasets'\n",
        # a folder package of the same name outside site-packages
        "ImportError: cannot import name 'AutoTokenizer' from 'transformers' "
        "(/home/u/proj/transformers/__init__.py)",
        # a circular import through the shadowing package
        "ImportError: cannot import name 'SFTTrainer' from partially initialized module 'trl' "
        "(most likely due to a circular import) (/workspace/app/trl/__init__.py)",
    ],
)
def test_long_standing_name_missing_reads_shadowed_module(log):
    assert lead(log) == ("MODULE_SHADOWED_BY_LOCAL_FILE", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a name that appeared in a later release (trl 0.14): the skew reading stays
        "ImportError: cannot import name 'GRPOTrainer' from 'trl'\n",
        # a name removed between releases (datasets 3.0 dropped load_metric)
        "ImportError: cannot import name 'load_metric' from 'datasets'\n",
        # the real package, from site-packages: not a shadowing module
        "ImportError: cannot import name 'load_dataset' from 'datasets' "
        "(/opt/conda/lib/python3.11/site-packages/datasets/__init__.py)",
        # a longer name beginning with a table's name
        "ImportError: cannot import name 'DatasetDictX' from 'datasets'\n",
    ],
)
def test_name_of_some_releases_or_real_package_is_not_shadowing(log):
    assert "MODULE_SHADOWED_BY_LOCAL_FILE" not in codes(log)


def test_skew_hint_stays_for_a_name_of_some_releases():
    log = "ImportError: cannot import name 'GRPOTrainer' from 'trl'\n"
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")


# --- a trainer without an attribute of another release --------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: 'XGRPOTrainer' object has no attribute 'num_iterations'. "
        "Did you mean: 'num_generations'?",
        # transformers' Trainer stopped setting tokenizer (processing_class) after 4.4x
        '  File "/proj/callbacks.py", line 40, in on_log\n'
        "    tok = trainer.tokenizer\n"
        "AttributeError: 'SFTTrainer' object has no attribute 'tokenizer'",
        "AttributeError: 'CustomDPOTrainer' object has no attribute '_stored_metrics'",
    ],
)
def test_trainer_missing_attribute_of_another_release_is_skew(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the user's own field on their own trainer
        "AttributeError: 'MyGRPOTrainer' object has no attribute 'reward_fn'",
        # a typo of a table attribute is the user's own
        "AttributeError: 'XGRPOTrainer' object has no attribute 'num_iteration'",
        "AttributeError: 'XGRPOTrainer' object has no attribute 'num_iterations_per_step'",
        # a table attribute on something that is no trainer
        "AttributeError: 'RolloutWorker' object has no attribute 'num_iterations'",
    ],
)
def test_own_attribute_or_non_trainer_is_not_skew(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


# --- huggingface_hub's retry line for HTTP 429 ----------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "2025-08-21T19:45:50.972+03:00\n"
        "HTTP Error 429 thrown while requesting HEAD https://huggingface.co/.../resolve/v2/config.json\n",
        "WARNING:huggingface_hub.utils._http:HTTP Error 429 thrown while requesting GET "
        "https://huggingface.co/api/models/Qwen/Qwen2.5-7B/revision/main",
    ],
)
def test_hub_retry_429_is_rate_limited(log):
    assert lead(log) == ("HF_HUB_RATE_LIMITED", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the same retry line for a server error: not a rate limit
        "HTTP Error 503 thrown while requesting HEAD https://huggingface.co/Qwen/Qwen2.5-7B/resolve/main/config.json",
        "HTTP Error 4290 thrown while requesting HEAD https://huggingface.co/x/y/resolve/main/config.json",
    ],
)
def test_hub_retry_other_status_is_not_rate_limited(log):
    assert "HF_HUB_RATE_LIMITED" not in codes(log)


# --- diffusers: not cached and the Hub's metadata not fetched --------------------------


def test_diffusers_not_cached_metadata_alone_is_model_path_hint():
    log = (
        "OSError: Cannot load model stabilityai/stable-diffusion-2-1: model is not cached locally "
        "and an error occurred while trying to fetch metadata from the Hub. Please check out the "
        "root cause in the stacktrace above.\n"
    )
    assert lead(log) == ("MODEL_PATH_NOT_FOUND", "info")


def test_diffusers_not_cached_after_connection_reset_leads_with_unreachable_hub():
    log = (
        "Couldn't connect to the Hub: (ProtocolError('Connection aborted.', "
        "ConnectionResetError(104, 'Connection reset by peer')), "
        "'(Request ID: fd131cef-4d8b-41bb-82e6-c2b18682bc17)').\n"
        "Will try to load from local cache.\n"
        "OSError: Cannot load model IDEA-CCNL/Taiyi-Stable-Diffusion-1B-chinese-v0.1: model is not "
        "cached locally and an error occurred while trying to fetch metadata from the Hub. Please "
        "check out the root cause in the stacktrace above."
    )
    found = codes(log)
    assert found[0] == "HF_HUB_UNREACHABLE"
    assert "MODEL_PATH_NOT_FOUND" in found


def test_model_cached_locally_line_is_not_read():
    log = "INFO: model is cached locally, skipping the metadata fetch from the Hub"
    assert "MODEL_PATH_NOT_FOUND" not in codes(log)
