"""Readings for the Hub's snapshot lookup failing, datasets' decoders without their optional
package, caches a pod's user cannot write, CUDA error 500 at start-up in a container, system
programs run by name that are not installed, names NumPy 2 removed, and an ImportError's text
re-raised under another class. Each with near misses that must not read so. Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead, readings

from shop_r1_doctor.logscan import diagnose_log

# --- the Hub: snapshot_download found neither the Hub nor a cached snapshot ---------------


@pytest.mark.parametrize(
    "log",
    [
        # huggingface_hub 0.x: the error alone
        "LocalEntryNotFoundError: An error happened while trying to locate the files on the Hub"
        " and we cannot find the appropriate snapshot folder for the specified revision on the"
        " local disk. Please check your internet connection and try again.",
        # 2.x: a comma, and the original error on the line before
        "huggingface_hub.errors.LocalEntryNotFoundError: Got: ConnectError: [Errno 111]"
        " Connection refused\nAn error happened while trying to locate the files on the Hub, and"
        " we cannot find the appropriate snapshot folder for the specified revision on the local"
        " disk. Please check your internet connection and try again.",
        # offline mode
        "LocalEntryNotFoundError: Cannot find an appropriate cached snapshot folder for the"
        " specified revision on the local disk and outgoing traffic has been disabled. To enable"
        " repo look-ups and downloads online, set 'HF_HUB_OFFLINE=0' as environment variable.",
    ],
)
def test_snapshot_lookup_failed_reads_as_hub_unreachable(log):
    assert lead(log) == ("HF_HUB_UNREACHABLE", "error")


def test_snapshot_lookup_after_a_certificate_error_leads_with_tls():
    log = (
        "huggingface_hub.errors.LocalEntryNotFoundError: Got: SSLError: [SSL:"
        " CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer"
        " certificate (_ssl.c:1006)\nAn error happened while trying to locate the files on the"
        " Hub, and we cannot find the appropriate snapshot folder for the specified revision on"
        " the local disk. Please check your internet connection and try again."
    )
    assert codes(log)[:2] == ["HF_HUB_TLS_UNTRUSTED", "HF_HUB_UNREACHABLE"]


def test_a_revision_the_hub_answered_it_lacks_is_not_unreachable():
    """The Hub was reached and answered 404: not a lookup that found neither Hub nor cache."""
    log = (
        "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not Found for"
        " url: https://huggingface.co/api/models/org/m/revision/v2.\nInvalid rev id: v2"
    )
    assert "HF_HUB_UNREACHABLE" not in codes(log)


# --- datasets' feature decoders: please install '<pkg>' ----------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: To support decoding audio data, please install 'torchcodec'. ",
        "ImportError: To support decoding videos, please install 'torchcodec'.",
        "ImportError: To support encoding images, please install 'Pillow'.",
        "ImportError: To support decoding 'mp3' audio files, please install 'sox'.",
        "ImportError: Please pip install rarfile",
    ],
)
def test_datasets_feature_package_missing_reads_as_not_installed(line):
    log = (
        "[/usr/local/lib/python3.11/dist-packages/datasets/features/audio.py]"
        "(https://localhost:8080/#) in decode_example(self, value, token_per_repo_id)\n" + line
    )
    assert lead(log) == ("PACKAGE_REQUESTED_NOT_INSTALLED", "error")


def test_a_datasets_decoder_refusing_the_data_is_no_missing_package():
    log = (
        "ValueError: Decoding mesh bytes requires a 'path' value with a .glb, .gltf, .ply, or"
        " .stl extension to infer the mesh file type."
    )
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" not in codes(log)


# --- caches a pod's user cannot write ---------------------------------------------------

HUB_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/utils/hub.py", line 470,'
    " in cached_files\n"
    "    hf_hub_download(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/huggingface_hub/file_download.py",'
    " line 1008, in hf_hub_download\n"
    "    return _hf_hub_download_to_cache_dir(\n"
)


def test_permission_error_without_errno_under_the_hub_download_reads_as_cache():
    log = HUB_FRAMES + "k8s deployment failure vllm OSError: PermissionError\n"
    assert lead(log) == ("CACHE_DIR_NOT_WRITABLE", "error")


@pytest.mark.parametrize(
    "tail",
    [
        # Windows: another process holds the file (a sharing violation, not a permission)
        "PermissionError: [WinError 32] The process cannot access the file because it is being"
        " used by another process: 'C:\\\\tmp\\\\x.lock'\n",
        # EPERM: an operation the file system refuses, not a directory this user cannot write
        "PermissionError: [Errno 1] Operation not permitted: '/mnt/share/x'\n",
    ],
)
def test_other_permission_errors_under_the_hub_are_not_read_as_cache(tail):
    assert "CACHE_DIR_NOT_WRITABLE" not in codes(HUB_FRAMES + tail)


CACHE_WARNING = (
    "There was a problem when trying to write in your cache folder (/.cache/huggingface/hub)."
    " You should set the environment variable TRANSFORMERS_CACHE to a writable directory.\n"
)


def test_cache_warning_then_a_failing_load_reads_as_cache_at_warning():
    log = CACHE_WARNING + (
        "Traceback (most recent call last):\n"
        '  File "/huggingfaceserver/huggingfaceserver/model.py", line 114, in load\n'
        "    model_config = AutoConfig.from_pretrained(model_id_or_path)\n"
        '  File "/prod_venv/lib/python3.10/site-packages/transformers/models/auto/'
        'configuration_auto.py", line 1100, in from_pretrained\n'
        "    config_dict, unused_kwargs = PretrainedConfig.get_config_dict(model_id, **kwargs)\n"
    )
    assert lead(log) == ("CACHE_DIR_NOT_WRITABLE", "warning")


def test_cache_warning_before_an_unrelated_failure_is_not_read():
    log = CACHE_WARNING + (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 40, in main\n'
        "    batch = collate(rows)\n"
        "KeyError: 'labels'\n"
    )
    assert "CACHE_DIR_NOT_WRITABLE" not in codes(log)


# --- CUDA error 500 at start-up: the container toolkit older than the host driver --------

ERR500 = (
    "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions"
    " before calling NumCudaDevices() that might have already set an error? Error 500: named"
    " symbol not found\n"
)


def test_error_500_in_a_wsl_container_reads_as_toolkit_too_old_at_error():
    log = "docker run --gpus all sd-webui  # Docker Desktop, WSL2 backend\n" + ERR500
    assert lead(log) == ("NVIDIA_CONTAINER_TOOLKIT_TOO_OLD", "error")
    assert "CUDA_INIT_FAILED_HOST_STATE" not in codes(log)


@pytest.mark.parametrize(
    "log", [ERR500, "ggml_cuda_init: failed to initialize CUDA: named symbol not found\n"]
)
def test_error_500_alone_reads_as_toolkit_too_old_at_warning(log):
    assert lead(log) == ("NVIDIA_CONTAINER_TOOLKIT_TOO_OLD", "warning")


def test_other_device_count_errors_stay_host_state():
    log = ERR500.replace(
        "Error 500: named symbol not found", "Error 802: system not yet initialized"
    )
    assert lead(log)[0] == "CUDA_INIT_FAILED_HOST_STATE"
    assert "NVIDIA_CONTAINER_TOOLKIT_TOO_OLD" not in codes(log)


def test_a_missing_kernel_symbol_after_start_up_is_not_the_toolkit():
    log = "c76d92cccb6e:72:456 [0] enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'\n"
    assert "NVIDIA_CONTAINER_TOOLKIT_TOO_OLD" not in codes(log)


# --- system programs run by name -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "FileNotFoundError: [Errno 2] No such file or directory: 'numactl'",
        "RuntimeError: launcher 'pdsh' not installed.",
        "bash: line 1: ssh: command not found",
        "sh: 1: ffmpeg: not found",
        "git: 'lfs' is not a git command. See 'git --help'.",
        "FileNotFoundError: [WinError 2] ... 'nvidia-smi' is not recognized as an internal or"
        " external command,",
        "please install the numactl package with apt",
        "error: [Errno 2] No such file or directory: '/usr/bin/git'",
    ],
)
def test_missing_system_program_reads_as_such(line):
    assert lead(line) == ("SYSTEM_PROGRAM_MISSING", "error")


@pytest.mark.parametrize(
    "line",
    [
        "FileNotFoundError: [Errno 2] No such file or directory: 'numactl.cfg'",
        "FileNotFoundError: [Errno 2] No such file or directory: '/home/u/.ssh'",
        "ssh: connect to host node2 port 22: Connection refused",
        "digit: command not found",
    ],
)
def test_near_misses_are_no_missing_program(line):
    assert "SYSTEM_PROGRAM_MISSING" not in codes(line)


def test_ninja_and_nvcc_run_by_name_read_as_their_own_codes():
    assert lead("FileNotFoundError: [Errno 2] No such file or directory: 'ninja'") == (
        "NINJA_MISSING_EXT_BUILD",
        "error",
    )
    assert lead(
        "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'"
    ) == (
        "CUDA_HOME_UNSET_EXT_BUILD",
        "error",
    )
    assert "SYSTEM_PROGRAM_MISSING" not in codes("bash: nvcc: command not found")


def test_build_files_named_like_the_tools_are_not_the_tools():
    log = "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/build/build.ninja'"
    assert "NINJA_MISSING_EXT_BUILD" not in codes(log)
    log = (
        "FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc.profile'"
    )
    assert "CUDA_HOME_UNSET_EXT_BUILD" not in codes(log)


# --- names NumPy 2 removed from its top level ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: cannot import name 'BUFSIZE' from 'numpy'"
        " (/home/u/venv/lib64/python3.11/site-packages/numpy/__init__.py)",
        "Cannot import name 'BUFSIZE' from 'numpy'",
        "from numpy import BUFSIZE\nImportError: cannot import name 'BUFSIZE' from 'numpy'"
        " (/usr/local/lib/python3.10/dist-packages/numpy/__init__.py)",
        "AttributeError: module 'numpy' has no attribute 'in1d'",
    ],
)
def test_numpy2_removed_name_reads_as_skew_with_numpy2_next(log):
    assert readings(log)[0] == ("PACKAGE_VERSION_SKEW", "warning")
    top = diagnose_log(log).lead
    assert top is not None and top.signature.codes[1:] == ("NUMPY2_BINARY_INCOMPAT",)


@pytest.mark.parametrize(
    "log",
    [
        "ImportError: cannot import name 'BUFSIZE' from 'mypkg' (/app/mypkg/__init__.py)",
        "ImportError: cannot import name 'float64' from 'numpy'",
        "AttributeError: module 'numpy' has no attribute 'prodd'",
    ],
)
def test_names_numpy_2_still_has_or_never_had_are_not_numpy2(log):
    also = [c for m in diagnose_log(log).matches for c in m.signature.codes]
    assert "NUMPY2_BINARY_INCOMPAT" not in also


# --- an ImportError's text re-raised under another class -----------------------------------

DS_FRAME = (
    '  File "/opt/conda/envs/w/lib/python3.11/site-packages/deepspeed/elasticity/'
    'elastic_agent.py", line 9, in <module>\n'
    "    from torch.distributed.elastic.agent.server.api import log, _get_socket_with_port\n"
)


def test_other_packages_name_missing_under_a_bare_exception_reads_as_skew():
    log = DS_FRAME + (
        "Exception: cannot import name 'log' from 'torch.distributed.elastic.agent.server.api'\n"
    )
    assert lead(log) == ("PACKAGE_VERSION_SKEW", "info")


def test_own_packages_name_missing_under_a_bare_exception_is_not_skew():
    log = DS_FRAME.replace("torch.distributed.elastic.agent.server.api", "deepspeed.utils") + (
        "Exception: cannot import name 'log' from 'deepspeed.utils'\n"
    )
    assert "PACKAGE_VERSION_SKEW" not in codes(log)
