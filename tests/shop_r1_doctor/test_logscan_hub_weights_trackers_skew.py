"""Hub rate limits and cut connections, weights files that are not weights, tokenizer files
a tokenizers release cannot parse, wandb without a key or a network, and packages out of
step: each read from the frameworks' own messages (codes and severities only; wording:
codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

# --- HF_HUB_RATE_LIMITED ----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # requests' raise_for_status on a Hub URL (huggingface_hub 0.x)
        "huggingface_hub.utils._errors.HfHubHTTPError: 429 Client Error: Too Many Requests"
        " for url: https://huggingface.co/api/models/Qwen/Qwen2.5-7B/revision/main",
        # huggingface_hub 2.x with the rate-limit headers
        "huggingface_hub.errors.HfHubHTTPError: \n\n429 Too Many Requests: you have reached"
        " your 'api' rate limit.\nRetry after 212 seconds (0/1000 requests remaining in"
        " current 300s window).\nUrl: https://huggingface.co/api/models/Qwen/Qwen3-8B.",
        # its CDN host
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url:"
        " https://cdn-lfs.hf.co/repos/ab/cd/model.safetensors",
    ],
)
def test_hub_429_is_the_rate_limit(log):
    assert lead(log) == ("HF_HUB_RATE_LIMITED", "error")


def test_a_429_from_another_host_is_not_the_hubs():
    log = (
        "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url:"
        " https://api.openai.com/v1/chat/completions"
    )
    assert "HF_HUB_RATE_LIMITED" not in codes(log)


# --- HF_HUB_UNREACHABLE: a cut Hub connection, a tokenizer that could not be fetched -------

RESET = (
    "requests.exceptions.ConnectionError: (ProtocolError('Connection aborted.',"
    " ConnectionResetError(104, 'Connection reset by peer')), '(Request ID: 5f0c-aa1b)')"
)


@pytest.mark.parametrize(
    "log",
    [
        RESET,
        "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co',"
        " port=443): Max retries exceeded with url: /api/models/gpt2 (Caused by"
        " ProtocolError('Connection aborted.', RemoteDisconnected('Remote end closed"
        " connection without response')))",
    ],
)
def test_a_cut_hub_connection_is_a_warning(log):
    assert lead(log) == ("HF_HUB_UNREACHABLE", "warning")


def test_a_reset_connection_elsewhere_is_not_the_hub():
    log = (
        "requests.exceptions.ConnectionError: ('Connection aborted.',"
        " ConnectionResetError(104, 'Connection reset by peer'))"
    )
    assert "HF_HUB_UNREACHABLE" not in codes(log)


TOKENIZER = (
    "OSError: Can't load tokenizer for '{0}'. If you were trying to load it from"
    " 'https://huggingface.co/models', make sure you don't have a local directory with the"
    " same name. Otherwise, make sure '{0}' is the correct path to a directory containing"
    " all relevant files for a {1} tokenizer."
)


@pytest.mark.parametrize(
    "log",
    [
        TOKENIZER.format("Qwen/Qwen2.5-7B", "Qwen2TokenizerFast"),
        TOKENIZER.format("bert-base-uncased", "BertTokenizer"),
    ],
)
def test_cant_load_tokenizer_is_a_hint(log):
    assert lead(log) == ("HF_HUB_UNREACHABLE", "info")


def test_a_specific_hub_reading_leads_over_the_tokenizer_hint():
    log = (
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and"
        " couldn't find them in the cached files.\n" + TOKENIZER.format("gpt2", "GPT2TokenizerFast")
    )
    assert lead(log) == ("HF_HUB_UNREACHABLE", "error")


def test_a_tokenizer_error_of_another_kind_is_not_the_hint():
    assert "HF_HUB_UNREACHABLE" not in codes(
        "OSError: Can't load tokenizer for 'gpt2'. Make sure the name is right."
    )


# --- DATASET_PATH_NOT_FILES ---------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "FileNotFoundError: Couldn't find a dataset script at"
        " /home/u/data/train.json/train.json.py or any data file in the same directory.",
        "FileNotFoundError: Couldn't find a dataset script at /data/sft/sft.py or any data file"
        " in the same directory. Couldn't find '/data/sft' on the Hugging Face Hub either:"
        " FileNotFoundError: Dataset '/data/sft' doesn't exist on the Hub",
        "FileNotFoundError: Couldn't find any data file at /mnt/data/train.jsonl.",
    ],
)
def test_a_dataset_path_naming_no_data(log):
    assert lead(log) == ("DATASET_PATH_NOT_FILES", "warning")


def test_a_dataset_script_at_its_path_is_not_this():
    # datasets 2.x's other message: a .py path that is not there (the user's path)
    log = "FileNotFoundError: Couldn't find a dataset script at /home/u/my_loader.py"
    assert "DATASET_PATH_NOT_FILES" not in codes(log)


# --- CHECKPOINT_NOT_WEIGHTS ---------------------------------------------------------------


def test_transformers_naming_an_lfs_pointer_is_an_error():
    log = (
        "OSError: You seem to have cloned a repository without having git-lfs installed."
        " Please install git-lfs and run `git lfs install` followed by `git lfs pull` in the"
        " folder you cloned."
    )
    assert lead(log) == ("CHECKPOINT_NOT_WEIGHTS", "error")


WEIGHTS_ONLY = (
    "_pickle.UnpicklingError: Weights only load failed. In PyTorch 2.6, we changed the default"
    " value of the `weights_only` argument in `torch.load` from `False` to `True`.\n"
    "Please file an issue with the following so that we can make `weights_only=True`"
    " compatible with your use case: WeightsUnpickler error: \n\nUnsupported operand {0}\n"
)


@pytest.mark.parametrize(
    "log",
    [
        "_pickle.UnpicklingError: invalid load key, 'v'.",
        "_pickle.UnpicklingError: invalid load key, '<'.",
        # torch >= 2.6's weights-only unpickler on the same two files (measured, torch 2.13)
        WEIGHTS_ONLY.format(118),
        WEIGHTS_ONLY.format(60),
        # safetensors while a model loads (0.3's variant name, 0.4+'s wording)
        '  File "/venv/lib/python3.10/site-packages/transformers/modeling_utils.py", line 479,'
        ' in load_state_dict\n    with safe_open(checkpoint_file, framework="pt") as f:\n'
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "Loading /root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B/snapshots/a1/"
        "model-00001-of-00004.safetensors\nsafetensors._safetensors_rust.SafetensorError:"
        " Error while deserializing header: header too large",
    ],
)
def test_a_weights_file_that_is_text(log):
    assert lead(log) == ("CHECKPOINT_NOT_WEIGHTS", "warning")


def test_a_large_header_outside_model_loading_is_not_read():
    # a valid file of a million tensors is over safetensors' header cap too (a user's data)
    log = (
        '  File "/home/u/data.py", line 80, in __init__\n'
        '    with safe_open(data_file, framework="pt") as f:\n'
        "safetensors_rust.SafetensorError: Error while deserializing header: header too large"
    )
    assert "CHECKPOINT_NOT_WEIGHTS" not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "_pickle.UnpicklingError: invalid load key, '\\x00'.",
        WEIGHTS_ONLY.format(12),
        "safetensors_rust.SafetensorError: Error while deserializing header:"
        " InvalidHeaderDeserialization",
    ],
)
def test_other_load_errors_are_not_text_files(log):
    assert "CHECKPOINT_NOT_WEIGHTS" not in codes(log)


def test_transformers_wrapper_is_a_hint_below_the_cause():
    wrapper = (
        "OSError: Unable to load weights from pytorch checkpoint file for"
        " '/models/x/pytorch_model.bin' at '/models/x/pytorch_model.bin'. If you tried to load"
        " a PyTorch model from a TF 2.0 checkpoint, please set from_tf=True."
    )
    assert lead(wrapper) == ("CHECKPOINT_TRUNCATED", "info")
    cut = (
        "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central"
        " directory\n\nDuring handling of the above exception, another exception occurred:\n"
    )
    assert lead(cut + wrapper) == ("CHECKPOINT_TRUNCATED", "error")
    # an HTML page: torch.load's error chained above the wrapper names it first
    html = "_pickle.UnpicklingError: invalid load key, '<'.\n\nDuring handling of the above"
    assert lead(html + " exception, another exception occurred:\n" + wrapper) == (
        "CHECKPOINT_NOT_WEIGHTS",
        "warning",
    )
    assert "CHECKPOINT_TRUNCATED" not in codes(
        "OSError: Unable to load weights from h5 file. If you tried to load a TF 2.0 model from"
        " a PyTorch checkpoint, please set from_pt=True."
    )


# --- TOKENIZERS_TOO_OLD_FOR_FILE ------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "Exception: data did not match any variant of untagged enum ModelWrapper at line"
        " 1251003 column 3",
        "Exception: data did not match any variant of untagged enum PyPreTokenizerTypeWrapper"
        " at line 40 column 3",
        "Exception: data did not match any variant of untagged enum PyNormalizerTypeWrapper at"
        " line 49 column 3",
    ],
)
def test_tokenizers_cannot_parse_the_file(log):
    assert lead(log) == ("TOKENIZERS_TOO_OLD_FOR_FILE", "warning")


def test_serde_on_another_programs_enum_is_not_tokenizers():
    log = "Error: data did not match any variant of untagged enum Value at line 3 column 1"
    assert "TOKENIZERS_TOO_OLD_FOR_FILE" not in codes(log)


# --- WANDB_API_KEY_MISSING / WANDB_UNREACHABLE ----------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
        "wandb.errors.errors.UsageError: api_key not configured (no-tty). call wandb login"
        " [your_api_key]",
        "wandb.errors.errors.UsageError: No API key configured. Use `wandb login` to log in.",
    ],
)
def test_wandb_without_a_key(log):
    assert lead(log) == ("WANDB_API_KEY_MISSING", "error")


def test_wandb_network_retry_is_a_hint():
    assert lead("wandb: Network error (ConnectionError), entering retry loop.") == (
        "WANDB_UNREACHABLE",
        "info",
    )
    assert lead("wandb: Network error (ProxyError), entering retry loop.")[0] == "WANDB_UNREACHABLE"


def test_wandb_lines_of_a_working_run_are_clean():
    log = (
        "wandb: Currently logged in as: alice. Use `wandb login --relogin` to force relogin\n"
        "wandb: Tracking run with wandb version 0.19.11\n"
        "wandb: Network error resolved after 0:00:12.345678, resuming normal operation.\n"
    )
    assert not {"WANDB_API_KEY_MISSING", "WANDB_UNREACHABLE"} & set(codes(log))


# --- PACKAGE_VERSION_SKEW: the lazy-import wrapper ------------------------------------------


def test_lazy_import_of_a_stack_name_is_skew():
    log = (
        "RuntimeError: Failed to import trl.trainer.grpo_trainer because of the following error"
        " (look up to see its traceback):\ncannot import name 'is_vllm_available' from"
        " 'transformers.utils'"
    )
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")
    assert "PACKAGE_VERSION_SKEW" not in codes(
        "RuntimeError: Failed to import mylib.train because of the following error (look up to"
        " see its traceback):\ncannot import name 'helper' from 'mylib.utils'"
    )


# --- PACKAGE_VERSION_SKEW: APIs that moved between releases ---------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ModuleNotFoundError: No module named 'torch._six'",
        '  File "/usr/lib/python3/dist-packages/deepspeed/runtime/utils.py", line 19, in'
        " <module>\n    from torch._six import inf\nModuleNotFoundError: No module named"
        " 'torch._six'",
        "AttributeError: module 'torch.library' has no attribute 'register_fake'",
        "AttributeError: module 'torch.library' has no attribute 'custom_op'",
    ],
)
def test_torch_api_older_or_newer_than_the_code(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "warning")


def test_other_torch_names_are_not_this():
    assert "PACKAGE_VERSION_SKEW" not in codes(
        "AttributeError: module 'torch.library' has no attribute 'my_op'"
    )
    # a torch submodule no release is known to have moved is not this warning; the generic
    # hint for a submodule missing from the installed release (info) may still read it
    assert ("PACKAGE_VERSION_SKEW", "warning") not in readings(
        "ModuleNotFoundError: No module named 'torch._sixty'"
    )


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: 'Qwen2Config' object has no attribute 'rope_theta'",
        "AttributeError: 'Qwen2_5_VLConfig' object has no attribute 'vocab_size'",
        "AttributeError: 'AcceleratorState' object has no attribute 'distributed_type'",
    ],
)
def test_fields_that_moved_are_a_skew_hint(log):
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: 'TrainConfig' object has no attribute 'lr'",
        "AttributeError: 'ModelConfig' object has no attribute 'hidden'",
        "AttributeError: 'AcceleratorStateX' object has no attribute 'foo'",
        "AttributeError: 'GameState' object has no attribute 'score'",
    ],
)
def test_a_projects_own_config_is_not_skew(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)
