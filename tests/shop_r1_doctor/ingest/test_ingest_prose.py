"""The machine as reporters describe it by hand (issue-template answers, `Key: value`
lines, sentences): the facts each form states, and the numbers it leaves unread."""

from __future__ import annotations

import pytest

from shop_r1_doctor.causes import rank_causes
from shop_r1_doctor.diagnose import diagnose
from shop_r1_doctor.ingest import DumpError, snapshot_from_dump

# GitHub's issue-form answers: a heading, a blank line, the value
TEMPLATE = """### OS

Linux

### GPU Library

CUDA 12.x

### Python version

3.12

### Pytorch version

2.7.0+cu128
"""


def test_issue_form_answers_are_read_under_their_headings():
    snap = snapshot_from_dump(TEMPLATE, "t")
    assert snap["packages"] == {"torch": {"version": "2.7.0+cu128"}}
    assert (snap["host"]["os"], snap["host"]["python"]["version"]) == ("linux", "3.12")
    assert "cuda_toolkit" not in snap and "driver" not in snap  # `CUDA 12.x` says no version


def test_a_sentence_gives_its_versions_and_gpu_but_not_an_ambiguous_cuda():
    text = (
        "My GPU is 8*TeslsV100 32G, the software environment is"
        " python3.10+cuda11.6+torch2.0.0+ transformers4.28.0.dev0, I run the fine tuning code:\n"
    )
    snap = snapshot_from_dump(text, "t")
    assert snap["packages"] == {
        "torch": {"version": "2.0.0"},
        "transformers": {"version": "4.28.0.dev0"},
    }
    assert [(g["name"], g["compute_capability"]) for g in snap["gpus"]] == [("NVIDIA V100", "7.0")]
    assert snap["host"]["python"]["version"] == "3.10"
    assert "driver" not in snap and "cuda_toolkit" not in snap


@pytest.mark.parametrize(
    ("text", "name", "cc"),
    [
        ("my running platform:5070ti  Torch: 2.0.1+cu117", "NVIDIA GeForce RTX 5070 Ti", "12.0"),
        ("Running on gpu NVIDIA TITAN XP", "NVIDIA TITAN Xp", "6.1"),
        ("Card: NVIDIA RTX A6000", "NVIDIA RTX A6000", "8.6"),
        ("GPU: A30 * 3", "NVIDIA A30", "8.0"),
        ("on a GeForce GTX 1080 Ti", "NVIDIA GeForce GTX 1080 Ti", "6.1"),
    ],
)
def test_gpu_models_as_people_write_them(text, name, cc):
    snap = snapshot_from_dump(text, "t")
    assert [(g["name"], g["compute_capability"]) for g in snap["gpus"]] == [(name, cc)]


@pytest.mark.parametrize(
    "text",
    [
        "torchvision 0.15.2 and torchaudio 2.0.2",  # their versions, not torch's
        "trained for 2080 steps on the T5 model",  # a year-like number, a model name
        "I have an RTX card and CUDA 12",  # no model, no version
    ],
)
def test_what_names_no_torch_version_and_no_gpu_model_is_not_read(text):
    with pytest.raises(Exception, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")


def test_cuda_version_is_the_drivers_only_beside_the_driver_version():
    inline = (
        "Running on gpu NVIDIA TITAN XP    NVIDIA-SMI 535.161.08             Driver Version:"
        " 535.161.08   CUDA Version: 12.2"
    )
    snap = snapshot_from_dump(inline, "t")
    assert snap["driver"] == {"version": "535.161.08", "cuda_version": "12.2"}
    assert [g["name"] for g in snap["gpus"]] == ["NVIDIA TITAN Xp"]
    elsewhere = snapshot_from_dump("Torch: 2.1.0 built with CUDA Version: 12.1\n", "t")
    assert "driver" not in elsewhere


def test_a_tools_output_wins_over_the_reporters_words():
    text = "Torch: 2.4.0\n\nPyTorch version: 2.5.1+cu124\nIs debug build: False\n"
    snap = snapshot_from_dump(text, "t")
    assert snap["packages"]["torch"]["version"] == "2.5.1+cu124"


def test_a_hand_written_environment_explains_the_log_it_came_with():
    env = "GPU: RTX 5090\nTorch: 2.8.0+cu126\n"
    log = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    findings = diagnose(snapshot_from_dump(env, "t")).findings
    lead = rank_causes(log, doctor_findings=findings).causes[0]
    assert (lead.code, lead.severity) == ("TORCH_NO_BLACKWELL_ARCH", "error")
    assert {e.source for e in lead.evidence} == {"log", "doctor"}


def test_torch_2_0s_cuda_11_wheels_have_no_kernels_for_a_blackwell_gpu():
    # torch 2.0's cu117 wheel: sm_37..sm_86 and no PTX (pytorch/builder's build_cuda.sh)
    snap = snapshot_from_dump("my running platform:5070ti  Torch: 2.0.1+cu117\n", "t")
    findings = [(f.code, f.severity) for f in diagnose(snap).findings]
    assert ("TORCH_NO_BLACKWELL_ARCH", "error") in findings


@pytest.mark.parametrize(
    "line",
    [
        "torch 2.1.0 requires triton==2.1.0, but you have triton 2.2.0 which is incompatible.",
        "ERROR: Could not find a version that satisfies the requirement torch==2.1.0+cu121",
        "Collecting vllm==0.6.3",
    ],
)
def test_pips_required_and_offered_versions_are_not_installed_ones(line):
    with pytest.raises(Exception, match="no environment dump recognised"):
        snapshot_from_dump(line + "\n", "t")


# issue forms that ask in questions or join two subjects under one heading, and leave their
# own placeholder in the paste
QUESTION_FORM = """**Which version of LM Studio?**
Example: LM Studio 0.3.15

**Which operating system?**
macos 15.4.1
"""
JOINED_FORM = """### GPUStack version

V2.0.3

### Operating System & CPU Architecture

Ubuntu24.04

### GPU

Nvidia RTX 4090 24GB *4
"""


def test_a_heading_worded_as_a_question_is_answered_on_the_next_line():
    snap = snapshot_from_dump(QUESTION_FORM, "t")
    assert snap["host"]["os"] == "darwin"
    assert "packages" not in snap  # the form's `Example: LM Studio 0.3.15` is no answer


def test_a_heading_of_two_subjects_answers_the_first():
    snap = snapshot_from_dump(JOINED_FORM, "t")
    assert snap["host"]["os"] == "linux"
    assert [g["name"] for g in snap["gpus"]] == ["NVIDIA GeForce RTX 4090"]


def test_a_placeholder_under_an_os_heading_is_not_the_answer():
    text = "### Operating system\nExample: Windows 11\nUbuntu 22.04\n"
    assert snapshot_from_dump(text, "t")["host"]["os"] == "linux"


def test_a_question_about_something_else_is_not_read():
    text = "**Which version of LM Studio?**\nmacOS build 0.3.15\n"
    with pytest.raises(DumpError):
        snapshot_from_dump(text, "t")


def test_a_version_in_parentheses_after_its_subject_is_read():
    # a reporter's sentence (torchtitan #1423's opening post)
    text = (
        "I think this is a torch version issue, but I am on the latest torch version (2.7.1)"
        " and also reproduced the error using the nightly PyTorch build.\n"
        "transformers version (4.51.3)\n"
    )
    snap = snapshot_from_dump(text, "t")
    assert snap["packages"] == {
        "torch": {"version": "2.7.1"},
        "transformers": {"version": "4.51.3"},
    }


@pytest.mark.parametrize(
    "text",
    [
        "the latest torch version (2.7.1 and the nightly",  # the parenthesis never closes
        "torch (2 GPUs) and then 2.7.1 steps",  # no version inside the parentheses
    ],
)
def test_a_parenthesis_that_holds_no_closed_version_is_not_read(text):
    with pytest.raises(Exception, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")


def test_versions_printed_by_the_reporters_own_commands_are_read():
    # a cluster user's shell (pytorch_sparse #377's opening post) and a REPL
    shell = (
        '$ python -c "import torch; print(torch.__version__)"\n'
        "2.3.1\n"
        '(env) [u@node1 proj]$ python -c "import torch; print(torch.cuda.is_available())"\n'
        "True\n"
    )
    assert snapshot_from_dump(shell, "t")["packages"] == {"torch": {"version": "2.3.1"}}
    repl = (
        ">>> print(transformers.__version__)\n"
        "4.51.3\n"
        ">>> print(sys.version)\n"
        "3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0]\n"
    )
    snap = snapshot_from_dump(repl, "t")
    assert snap["packages"] == {"transformers": {"version": "4.51.3"}}
    assert snap["host"]["python"]["version"] == "3.10"


@pytest.mark.parametrize(
    "text",
    [
        # what follows the print is not a value
        '$ python -c "import torch; print(torch.__version__)"\nTraceback (most recent call last):\n',
        # a package the checks do not read
        ">>> print(einops.__version__)\n0.8.0\n",
    ],
)
def test_a_print_not_answered_by_a_version_is_not_read(text):
    with pytest.raises(DumpError, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")


def test_versions_stated_in_chinese_are_read():
    # `torch版本2.1 python版本3.8` (Ascend/pytorch #24): 版本 is "version"
    snap = snapshot_from_dump("torch版本2.1 python版本3.8\n", "t")
    assert snap["packages"] == {"torch": {"version": "2.1"}}
    assert snap["host"]["python"]["version"] == "3.8"


# microsoft/WSL's issue form: the Windows build and the WSL package's version say nothing
# of the distro's WSL; the ticked box and the distro do
WSL_FORM = """### Windows Version

Microsoft Windows [Version 10.0.19045.3570]

### WSL Version

2.0.9.0

### Are you using WSL 1 or WSL 2?

- [{one}] WSL 2
- [{two}] WSL 1

### Distro Version

Ubuntu 22.04
"""


@pytest.mark.parametrize(("one", "two", "wsl"), [("X", " ", 2), (" ", "x", 1)])
def test_a_wsl_forms_ticked_box_and_distro_are_read(one, two, wsl):
    host = snapshot_from_dump(WSL_FORM.format(one=one, two=two), "t")["host"]
    assert host == {"os": "linux", "wsl": wsl, "os_release": "Ubuntu 22.04"}
    assert snapshot_from_dump("### WSL 1 or WSL 2?\n\nWSL2\n", "t")["host"]["wsl"] == 2


@pytest.mark.parametrize(
    "text",
    [
        "### WSL Version\n\n2.0.9.0\n",  # the WSL package's version, not WSL 2
        "### Windows Version\n\nMicrosoft Windows [Version 10.0.19045.3570]\n",
        "### Are you using WSL 1 or WSL 2?\n\n- [ ] WSL 2\n- [ ] WSL 1\n",  # nothing ticked
        "### WSL 1 or WSL 2?\n\n2.0.9.0\n",  # answered with the package's version
    ],
)
def test_what_a_wsl_form_leaves_unsaid_is_not_read(text):
    with pytest.raises(DumpError, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")


@pytest.mark.parametrize(
    ("text", "host"),
    [
        (
            "operation system version: centos_7_9_x64\n",
            {"os": "linux", "os_release": "centos_7_9_x64"},
        ),
        ("* **OS:** Ubuntu 20.04 LTS\n", {"os": "linux", "os_release": "Ubuntu 20.04 LTS"}),
        ("**Platform:** win32\n", {"os": "windows"}),  # sys.platform's values
        ("platform: Darwin\n", {"os": "darwin"}),
        ("- Platform: Windows-10-10.0.19045-SP0\n", {"os": "windows"}),  # platform.platform()
    ],
)
def test_the_os_is_read_from_key_value_lines_in_any_case_and_markup(text, host):
    assert snapshot_from_dump(text, "t")["host"] == host


def test_versions_under_bold_and_code_marked_keys_are_read():
    text = "* **PyTorch:** 2.4.1+cu121\n* **`datasets` version:** 4.5.0\n* **Python:** 3.8.20\n"
    snap = snapshot_from_dump(text, "t")
    assert snap["packages"] == {
        "torch": {"version": "2.4.1+cu121"},
        "datasets": {"version": "4.5.0"},
    }
    assert snap["host"]["python"]["version"] == "3.8"


def test_a_cuda_version_in_any_spacing_is_the_drivers_beside_the_driver_version():
    for text in (
        "driver version: 535.104.05\ncuda version:  12.2\n",
        "driver version:535.104.05 cuda version12.2",
    ):
        driver = snapshot_from_dump(text, "t")["driver"]
        assert driver == {"version": "535.104.05", "cuda_version": "12.2"}


@pytest.mark.parametrize(
    "text",
    [
        # whose CUDA (the driver's, the toolkit's, torch's wheel's) the line does not say
        "cuda version11.8\n",
        "cuda version:  12.2\n",
        "OS version: 10.0.19045\n",  # a build number names no OS
        "**Platform:** Hugging Face Space\n",  # neither sys.platform nor platform.platform()
        "**Version:** ('2.2.2', 'stable')\n",  # names no package
        "Linux + Nvidia\n",  # no key, no version
        "### Backend\n\nHugging Face Space/Endpoints\n",  # a form's question about no fact kept
        "I get hipErrorNoBinaryForGpu even with torch* set to +rocm5.2\n",  # no torch version
    ],
)
def test_key_value_lines_that_state_no_kept_fact_are_not_read(text):
    with pytest.raises(DumpError, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")


def test_a_line_after_unticked_boxes_is_no_answer_to_their_heading():
    text = "### OS\n\n- [ ] Windows\n- [ ] Linux\nI think it is the driver\n"
    with pytest.raises(DumpError, match="no environment dump recognised"):
        snapshot_from_dump(text, "t")
