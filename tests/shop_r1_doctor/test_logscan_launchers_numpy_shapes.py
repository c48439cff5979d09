"""Readings learned from held-out batch 17, on text shapes beyond the batch's own pastes:
a launcher the shell cannot find, an extension built against NumPy 1.x that cannot load
NumPy's C API, a package's own frame looking a key up in a list. Codes and severities
only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

from shop_r1_doctor.logscan import diagnose_log

# --- WRONG_PYTHON_INTERPRETER: the launcher is not on the shell's PATH ---------------------


@pytest.mark.parametrize(
    "line",
    [
        # bash running a script, behind an app's own log prefix
        "[2025-01-30 10:13:44] [INFO] /opt/app/outputs/run/train.sh: line 1: accelerate: command not found",
        # bash -c, an interactive bash, a Slurm batch script
        "bash: line 1: torchrun: command not found",
        "bash: deepspeed: command not found",
        "/var/spool/slurmd/job4242/slurm_script: line 12: llamafactory-cli: command not found",
        # zsh, dash running a script, dash's `sh -c`, busybox
        "zsh: command not found: trl",
        "./train.sh: 3: accelerate: not found",
        "sh: 1: vllm: not found",
        "sh: ray: not found",
        # cmd.exe and PowerShell 5 / 7
        "'accelerate' is not recognized as an internal or external command,",
        "torchrun : The term 'torchrun' is not recognized as the name of a cmdlet, function, "
        "script file, or operable program.",
        "The term 'accelerate.exe' is not recognized as a name of a cmdlet, function, script "
        "file, or executable program.",
    ],
)
def test_a_launcher_the_shell_cannot_find_is_the_wrong_environment(line):
    assert readings(line) == [("WRONG_PYTHON_INTERPRETER", "warning")]
    lead = diagnose_log(line).lead
    assert lead is not None and "PACKAGE_REQUESTED_NOT_INSTALLED" in lead.signature.also


@pytest.mark.parametrize(
    "line",
    [
        # not a launcher of the stack
        "bash: nvidia-smi: command not found",
        "train.sh: line 2: accelerate_config: command not found",
        "bash: ./accelerate.sh: command not found",
        "zsh: command not found: ray-tune",
        # `not found` that is no shell's lookup of a command
        "checking for ray: not found",
        "'accelerate' is not recognized as a valid choice",
    ],
)
def test_other_commands_and_other_not_found_texts_are_not_read(line):
    assert "WRONG_PYTHON_INTERPRETER" not in codes(line)


# --- NUMPY2_BINARY_INCOMPAT: a NumPy 1.x build's C-API import failed ------------------------

CV2 = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/run.py", line 3, in <module>\n'
    "    import cv2\n"
    '  File "/home/u/.venv/lib/python3.10/site-packages/cv2/__init__.py", line 181, in <module>\n'
    "    bootstrap()\n"
)


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: numpy.core.multiarray failed to import\n",
        CV2 + "ImportError: numpy.core.multiarray failed to import\n",
        # Cython's auto-generated call, when the module cimports numpy without import_array()
        "ImportError: numpy.core.multiarray failed to import (auto-generated because you didn't "
        "call 'numpy.import_array()' after cimporting numpy; use '<void>numpy._import_array' to "
        "disable if you are certain you don't need it).\n",
    ],
)
def test_a_numpy1_builds_failed_capi_import_is_a_numpy2_hint(log):
    assert readings(log) == [("NUMPY2_BINARY_INCOMPAT", "info")]
    lead = diagnose_log(log).lead
    assert lead is not None and "NUMPY_OLDER_THAN_BUILD" in lead.signature.also


def test_the_hint_gives_way_where_the_log_names_the_cause():
    banner = (
        "A module that was compiled using NumPy 1.x cannot be run in\n"
        "NumPy 2.1.3 as it may crash. To support both 1.x and 2.x\n"
    )
    assert readings(banner + CV2 + "ImportError: numpy.core.multiarray failed to import\n") == [
        ("NUMPY2_BINARY_INCOMPAT", "error")
    ]
    older = (
        "RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf\n"
    )
    got = codes(older + "ImportError: numpy.core.multiarray failed to import\n")
    assert got == ["NUMPY_OLDER_THAN_BUILD"]
    broken = "ImportError: \n\nIMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE!\n\nImporting the numpy C-extensions failed.\n"
    assert "NUMPY2_BINARY_INCOMPAT" not in codes(
        broken + "ImportError: numpy.core.multiarray failed to import\n"
    )


def test_numpy2s_own_spelling_is_no_numpy1_build():
    # NumPy 2's headers spell the module numpy._core: that extension was built for NumPy 2
    assert "NUMPY2_BINARY_INCOMPAT" not in codes(
        "ImportError: numpy._core.multiarray failed to import\n"
    )


# --- PACKAGE_VERSION_SKEW: a package's own frame looks a key up in a list -------------------

LIST_BY_KEY = "TypeError: list indices must be integers or slices, not str\n"
COMPUTE_LOSS = (
    '    prompt_ids, prompt_mask = inputs["prompt_ids"], inputs["prompt_mask"]\n'
    "                              ~~~~~~^^^^^^^^^^^^^^\n"
)


@pytest.mark.parametrize(
    "frame",
    [
        # Unsloth's compiled copy of a TRL trainer: a full frame, a paste cut mid-path,
        # a Windows path
        '  File "/content/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 1054, in compute_loss\n',
        '/unsloth_compiled_cache/UnslothGRPOTrainer.py", line 1054, in compute_loss\n',
        '  File "C:\\work\\unsloth_compiled_cache\\UnslothGRPOTrainer.py", line 1054, in compute_loss\n',
        # a package in site-packages / dist-packages, and a notebook's frame of it
        '  File "/opt/conda/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 700, in compute_loss\n',
        "/usr/local/lib/python3.11/dist-packages/verl/trainer/ppo/ray_trainer.py in fit(self)\n",
    ],
)
def test_a_package_frame_looking_a_key_up_in_a_list_is_a_skew_hint(frame):
    assert readings(frame + COMPUTE_LOSS + LIST_BY_KEY) == [("PACKAGE_VERSION_SKEW", "info")]
    # a tuple handed where a mapping was expected reads the same
    tuple_error = LIST_BY_KEY.replace("list indices", "tuple indices")
    assert readings(frame + COMPUTE_LOSS + tuple_error) == [("PACKAGE_VERSION_SKEW", "info")]


PKG = '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 700, in compute_loss\n'


@pytest.mark.parametrize(
    "log",
    [
        # the error with no frame at all
        LIST_BY_KEY,
        # the last frame is the user's script, or a notebook cell
        PKG + '  File "/home/u/train.py", line 12, in <module>\n    x = rows["a"]\n' + LIST_BY_KEY,
        PKG + '<ipython-input-4-1f2e3d> in <cell line: 0>()\n----> 3 rows["a"]\n' + LIST_BY_KEY,
        # frames that run the user's data or functions
        '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 900, in _calculate_rewards\n'
        + LIST_BY_KEY,
        '  File "/x/site-packages/transformers/data/data_collator.py", line 50, in __call__\n'
        + LIST_BY_KEY,
        '  File "/x/site-packages/datasets/arrow_dataset.py", line 3, in _map_single\n'
        + LIST_BY_KEY,
        # a package that is no layer of the stack (the user's own installed module)
        '  File "/x/site-packages/mytools/io.py", line 3, in load\n' + LIST_BY_KEY,
        # other indexing errors in a package frame: a string for a mapping, an index past
        # the end, a float index
        PKG + "TypeError: string indices must be integers\n",
        PKG + "IndexError: list index out of range\n",
        PKG + "TypeError: list indices must be integers or slices, not float\n",
    ],
)
def test_no_skew_where_the_list_is_the_users_or_the_error_another(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)
