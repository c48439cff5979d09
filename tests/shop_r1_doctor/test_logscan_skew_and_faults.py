"""Readings learned from held-out batch 11, on text shapes beyond the batch's own pastes:
a GPU hardware fault, two packages whose releases do not work together, a package
missing from a notebook's kernel. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

from shop_r1_doctor.logscan import diagnose_log

# --- GPU_HARDWARE_FAULT -----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: uncorrectable ECC error encountered",
        "RuntimeError: CUDA error: uncorrectable ECC error encountered！！！",
        "torch.AcceleratorError: CUDA error: uncorrectable NVLink error detected during the execution",
        "NCCL WARN Cuda failure 'uncorrectable ECC error encountered'",
        "RuntimeError: Triton Error [CUDA]: CUDA_ERROR_ECC_UNCORRECTABLE",
        "[ 8123.4] NVRM: Xid (PCI:0000:3b:00): 79, pid=2417, name=python, GPU has fallen off the bus.",
        "NVRM: Xid (PCI:0000:b1:00): 48, pid=9, An uncorrectable double bit error (DBE) has been detected",
        "NVRM: Xid (PCI:0000:18:00): 95, pid=311, Uncontained: FBHUB. RST: Yes, D-RST: No",
        "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
    ],
)
def test_the_gpus_own_hardware_fault_is_an_error_level_machine_fault(line):
    assert readings(line)[0] == ("GPU_HARDWARE_FAULT", "error")


def test_the_hardware_fault_leads_over_what_it_set_off():
    # the other nodes' errors come first in the merged log (their peer died, so a
    # connect is refused), the faulty GPU's rank last
    log = (
        "misc/socket.cc:484 NCCL WARN socketStartConnect: connect to 10.10.1.2<45913> failed : "
        "Connection refused\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "[rank3]: RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError\n"
    )
    got = readings(log)
    assert got[0] == ("GPU_HARDWARE_FAULT", "error")
    assert len(got) > 1  # NCCL's reading stays, below the fault


@pytest.mark.parametrize(
    "line",
    [
        # application Xids: an illegal access the program made, not the hardware
        "NVRM: Xid (PCI:0000:3b:00): 13, pid=2417, Graphics SM Warp Exception",
        "NVRM: Xid (PCI:0000:3b:00): 31, pid=2417, Ch 00000010, intr 10000000. MMU Fault",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "ECC errors: corrected 0, uncorrected 0",
    ],
)
def test_faults_a_program_causes_are_not_hardware(line):
    assert "GPU_HARDWARE_FAULT" not in [c for c, _ in readings(line)]


# --- PACKAGE_VERSION_SKEW ---------------------------------------------------------------

UNSLOTH_CALL = (
    '  File "/usr/local/lib/python3.10/dist-packages/unsloth/models/llama.py", line 1605, '
    "in _fast_inner_training_loop\n"
    "    batch_samples, num_items_in_batch = self.get_batch_samples(epoch_iterator, n, device)\n"
    "TypeError: _unsloth_get_batch_samples() takes 3 positional arguments but 4 were given\n"
)
BANNER = "==((====))==  Unsloth 2025.3.19: Fast Llama patching. Transformers: 4.50.0.\n"


def test_a_package_calling_another_with_the_wrong_arguments_is_a_skew_hint():
    assert readings(UNSLOTH_CALL) == [("PACKAGE_VERSION_SKEW", "info")]


def test_the_skew_is_a_warning_when_the_log_shows_both_versions():
    assert readings(BANNER + UNSLOTH_CALL) == [("PACKAGE_VERSION_SKEW", "warning")]
    pip = "transformers==4.50.0\nunsloth==2025.3.19\n"
    assert readings(pip + UNSLOTH_CALL) == [("PACKAGE_VERSION_SKEW", "warning")]
    # one package's version alone is not the pair
    assert readings("transformers==4.50.0\n" + UNSLOTH_CALL) == [("PACKAGE_VERSION_SKEW", "info")]


@pytest.mark.parametrize(
    "tail",
    [
        "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params' (/x)",
        "AttributeError: module 'transformers' has no attribute 'PretrainedConfig'",
        "TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'",
        "TypeError: LoraConfig.__init__() missing 1 required positional argument: 'r'",
    ],
)
def test_another_packages_api_failing_in_a_packages_frame_is_skew(tail):
    log = (
        '  File "/opt/conda/lib/python3.11/site-packages/unsloth_zoo/trainer.py", line 40, in f\n'
        "    x = y()\n"
        "        ^^^\n"
        f"{tail}\n"
    )
    assert ("PACKAGE_VERSION_SKEW", "info") in readings(log)


@pytest.mark.parametrize(
    "log",
    [
        # the package's own name missing from itself: a broken install, not two packages
        '  File "/x/site-packages/unsloth/__init__.py", line 3, in <module>\n'
        "ImportError: cannot import name 'FastModel' from 'unsloth' (/x/site-packages/unsloth)\n",
        # the user's reward function, called by TRL with the arguments TRL documents
        '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 1001, in _calculate_rewards\n'
        "    output_reward_func = reward_func(prompts=prompts, completions=completions)\n"
        "TypeError: my_reward() got an unexpected keyword argument 'prompts'\n",
        # the user's model forward, called through nn.Module
        '  File "/x/site-packages/torch/nn/modules/module.py", line 1750, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n"
        "TypeError: forward() got an unexpected keyword argument 'num_items_in_batch'\n",
        # the user's own call: the last frame is the user's script
        '  File "/x/site-packages/trl/trainer/grpo_config.py", line 9, in f\n'
        '  File "/home/u/train.py", line 12, in <module>\n'
        "    cfg = GRPOConfig(top_p=0.9)\n"
        "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'top_p'\n",
        # no frame at all: the title line of batch 11's user bug
        "[Bug] TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'top_p'\n",
    ],
)
def test_no_skew_where_the_user_or_one_package_is_at_fault(log):
    assert "PACKAGE_VERSION_SKEW" not in [c for c, _ in readings(log)]


def test_a_name_renamed_only_in_case_is_a_skew_hint():
    line = "NameError: name 'PreTrainedConfig' is not defined. Did you mean: 'PretrainedConfig'?"
    assert readings(line) == [("PACKAGE_VERSION_SKEW", "info")]
    imp = "ImportError: cannot import name 'PretrainedConfig' from 'transformers' (/x). Did you mean: 'PreTrainedConfig'?"
    assert readings(imp) == [("PACKAGE_VERSION_SKEW", "info")]
    # a suggestion that is another word is a typo, and the same name is no rename
    assert readings("NameError: name 'tokenzier' is not defined. Did you mean: 'tokenizer'?") == []
    assert readings("NameError: name 'Foo' is not defined. Did you mean: 'Foo'?") == []


def test_a_specific_pairing_leads_over_the_general_skew():
    log = (
        '  File "/usr/local/lib/python3.12/dist-packages/trl/trainer/grpo_trainer.py", line 95, in <module>\n'
        "    from vllm.sampling_params import GuidedDecodingParams\n"
        "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params' (/x)\n"
        "/usr/local/lib/python3.12/dist-packages/trl/import_utils.py:91: UserWarning: TRL currently "
        "only supports vLLM version `0.10.2`. You have version 0.12.0 installed. We recommend to "
        "install this version to avoid compatibility issues.\n"
    )
    got = [c for c, _ in readings(log)]
    assert got[0] == "TRL_VLLM_VERSION_SKEW"
    assert "PACKAGE_VERSION_SKEW" in got[1:]


# --- a package missing from a notebook's kernel ------------------------------------------

COLAB = (
    "[<ipython-input-9-a8862fb41a37>](https://localhost:8080/#) in <cell line: 0>()\n"
    "----> 6 from llamafactory.chat import ChatModel\n"
    "ModuleNotFoundError: No module named 'llamafactory'\n"
)


def test_a_module_missing_in_a_notebook_is_a_hint_to_install_it_in_the_kernel():
    got = readings(COLAB)
    assert got[0] == ("PACKAGE_REQUESTED_NOT_INSTALLED", "info")
    lead = diagnose_log(COLAB).lead
    assert lead is not None and "WRONG_PYTHON_INTERPRETER" in lead.signature.also


def test_a_module_missing_outside_a_notebook_claims_nothing_new():
    plain = "ModuleNotFoundError: No module named 'llamafactory'\n"
    assert readings(plain) == []
    # a submodule (a package's compiled part) is not a package left uninstalled
    sub = COLAB.replace("'llamafactory'", "'llamafactory.extras'")
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in [c for c, _ in readings(sub)]
