"""Readings learned from held-out batch 12, on text shapes beyond the batch's own pastes:
torch's `CUDA driver error:` texts, a requirement's version range not met, a stack
package's name that does not import, verl's dynamic sampling running out of batches.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import CODES, codes, readings

from shop_r1_doctor.logscan import diagnose_log

# --- GPU_OUT_OF_MEMORY from torch's driver-API check ------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA driver error: out of memory",
        "torch.AcceleratorError: CUDA driver error: out of memory",
        "[rank1]: RuntimeError: Triton Error [CUDA]: CUDA_ERROR_OUT_OF_MEMORY",
    ],
)
def test_the_drivers_out_of_memory_is_an_error_level_oom(line):
    assert readings(line)[0] == ("GPU_OUT_OF_MEMORY", "error")


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: CUDA driver error: invalid argument",
        '  File "/x/site-packages/torch/cuda/memory.py", line 88, in empty_cache\n'
        "    torch._C._cuda_emptyCache()\n"
        "[rank0]: RuntimeError: CUDA driver error: invalid argument\n",
        "CUDA_ERROR_INVALID_VALUE returned by cuMemMap (expandable segment)",
    ],
)
def test_invalid_argument_on_the_drivers_memory_path_is_an_oom_hint(log):
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "info")


def test_a_shown_oom_leads_over_the_invalid_argument_hint():
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "RuntimeError: CUDA driver error: invalid argument\n"
    )
    assert readings(log)[0] == ("GPU_OUT_OF_MEMORY", "error")


def test_a_specific_cause_leads_over_the_invalid_argument_hint():
    # a driver older than the torch build's CUDA also fails driver calls; its line comes
    # after the hint's, so only the rank puts it first
    log = (
        "[rank1]: RuntimeError: CUDA driver error: invalid argument\n"
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).\n"
    )
    assert readings(log)[0][0] == "DRIVER_TOO_OLD_FOR_TORCH_CUDA"


@pytest.mark.parametrize(
    "line",
    [
        # the runtime API's invalid argument: a kernel launch or a copy, not the allocator
        "RuntimeError: CUDA error: invalid argument",
        "RuntimeError: CUDA driver error: unknown error",
    ],
)
def test_other_cuda_errors_are_not_read_as_oom(line):
    assert "GPU_OUT_OF_MEMORY" not in codes(line)


# --- REQUIREMENT_CONFLICT ---------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # the required package's own frame runs, so it is installed: outside the range
        '  File "/x/site-packages/tokenizers/__init__.py", line 78, in <module>\n'
        "pkg_resources.DistributionNotFound: The 'tokenizers<0.19,>=0.14' distribution was "
        "not found and is required by transformers\n",
        "pkg_resources.DistributionNotFound: The 'peft>=0.14.0' distribution was not found "
        "and is required by trl\n"
        "RuntimeError: Failed to import peft.tuners because of the following error\n",
        "RuntimeError: Failed to import transformers.trainer because of the following "
        "error (look up to see its traceback):\npkg_resources.DistributionNotFound: The "
        "'transformers<4.50,>=4.45' distribution was not found and is required by trl\n",
        "pkg_resources.ContextualVersionConflict: (numpy 2.0.1 (/x/site-packages), "
        "Requirement.parse('numpy<2,>=1.22'), {'vllm'})",
        "ImportError: huggingface-hub>=0.23.2,<1.0 is required for a normal functioning of "
        "this module, but found huggingface-hub==1.0.1.",
        "ERROR: pip's dependency resolver does not currently take into account all the "
        "packages that are installed.\nllamafactory 0.9.2 requires transformers!=4.46.*,"
        "<=4.48.3,>=4.41.2, but you have transformers 4.49.0 which is incompatible.",
    ],
)
def test_a_version_outside_a_required_range_is_a_conflict(log):
    assert ("REQUIREMENT_CONFLICT", "warning") in readings(log)


def test_a_range_not_met_without_the_package_seen_is_a_hint_with_the_absent_alternative():
    log = (
        "pkg_resources.DistributionNotFound: The 'accelerate>=1.4.0' distribution was not "
        "found and is required by trl"
    )
    [match] = [m for m in diagnose_log(log).matches if m.code == "REQUIREMENT_CONFLICT"]
    assert match.severity(CODES["REQUIREMENT_CONFLICT"].severity) == "info"
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" in match.signature.codes


@pytest.mark.parametrize(
    "line",
    [
        # transformers' own check: the package is absent (importlib found no metadata)
        "importlib.metadata.PackageNotFoundError: No package metadata was found for The "
        "'deepspeed>=0.9.3' distribution was not found and is required by this application.",
        # no version range: nothing says an installed version is outside one
        "pkg_resources.DistributionNotFound: The 'flash-attn' distribution was not found and "
        "is required by myproject",
    ],
)
def test_an_absent_package_is_not_a_conflict(line):
    assert "REQUIREMENT_CONFLICT" not in codes(line)


# --- PACKAGE_VERSION_SKEW from a name that does not import ------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # IPython 8's cell frame: the user's import of a name this trl release lacks
        "Cell In[3], line 1\n----> 1 from trl import GRPOTrainer\n\n"
        "ImportError: cannot import name 'GRPOTrainer' from 'trl' "
        "(/usr/local/lib/python3.10/dist-packages/trl/__init__.py)",
        "ImportError: cannot import name 'top_k_top_p_filtering' from 'transformers' "
        "(/opt/conda/lib/python3.11/site-packages/transformers/__init__.py)",
        "ImportError: cannot import name 'cached_download' from 'huggingface_hub'",
    ],
)
def test_a_stack_name_that_does_not_import_is_a_skew_hint(log):
    assert ("PACKAGE_VERSION_SKEW", "info") in readings(log)


def notebook_frame(frame_pkg: str, import_from: str) -> str:
    """An IPython frame as Colab prints it: the file, 11 numbered source lines, the error
    (more lines than a plain traceback's frame reading looks through)."""
    source = "\n".join(f"    {n:>4}     x{n} = {n}" for n in range(96, 101))
    after = "\n".join(f"    {n:>4}     y{n} = {n}" for n in range(102, 107))
    return (
        f"/usr/local/lib/python3.11/dist-packages/{frame_pkg}/models/_utils.py in <module>\n"
        f"{source}\n--> 101 from {import_from} import (\n{after}\n\n"
        f"ImportError: cannot import name '_patched_fn' from '{import_from}'\n"
    )


def test_a_package_frame_importing_from_a_package_sharing_its_prefix_is_skew():
    # unsloth and unsloth_zoo are two distributions, released apart
    log = notebook_frame("unsloth", "unsloth_zoo.loss_utils")
    assert ("PACKAGE_VERSION_SKEW", "info") in readings(log)


@pytest.mark.parametrize(
    "log",
    [
        # a package's own frame missing its own name: one broken install
        '  File "/x/site-packages/unsloth_zoo/__init__.py", line 3, in <module>\n'
        "ImportError: cannot import name 'patch_x' from 'unsloth_zoo.patching' "
        "(/x/site-packages/unsloth_zoo/patching.py)\n",
        notebook_frame("unsloth_zoo", "unsloth_zoo.loss_utils"),
        # a circular import
        "ImportError: cannot import name 'AutoModel' from partially initialized module "
        "'transformers' (most likely due to a circular import)",
        # the user's own module
        "ImportError: cannot import name 'helper' from 'utils' (/home/u/proj/utils.py)",
    ],
)
def test_no_skew_from_one_package_a_cycle_or_the_users_module(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


# --- GRPO_NO_REWARD_SIGNAL from verl's dynamic sampling ---------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "(TaskRunner pid=2011) ValueError: num_gen_batches=11 >= max_num_gen_batches=10. "
        "Generated too many. Please check your data.",
        "ValueError: num_gen_batches=5 >= max_num_gen_batches=4. Generated too many batches "
        "while filtering.",
        "ValueError: Generated too many. Please check if your data are too difficult.",
    ],
)
def test_dynamic_sampling_out_of_batches_is_no_reward_signal(line):
    assert readings(line)[0] == ("GRPO_NO_REWARD_SIGNAL", "warning")


@pytest.mark.parametrize(
    "line",
    [
        "(TaskRunner pid=2011) num_gen_batches=3. Keep generating...",
        "(TaskRunner pid=2011) num_prompt_in_batch=96 < prompt_bsz=512",
        "algorithm.filter_groups.max_num_gen_batches=10",
    ],
)
def test_dynamic_sampling_at_work_is_not_a_failure(line):
    assert codes(line) == []
