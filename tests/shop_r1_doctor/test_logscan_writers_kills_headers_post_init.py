"""Which writer met a full disk (pip's install, a model download, a temp or cache path;
ENOSPC in any locale), a kill as the shell's job control or a progress bar shows it, CUDA
headers missing in an extension build, a working or root-level output directory that is
not writable, and a model class that misses what transformers 5's post_init sets. Each on
the framework's own wording and on a pasted shape, with a near miss that must not be read
so. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

DISK_LOW = "DISK_LOW"
CKPT = "DISK_FULL_AT_CHECKPOINT"
OOM = "HOST_OOM_KILLED"
CUDA_HOME = "CUDA_HOME_UNSET_EXT_BUILD"
WORKDIR = "WORKDIR_NOT_WRITABLE"
OUTDIR = "OUTPUT_DIR_NOT_WRITABLE"
SKEW = "PACKAGE_VERSION_SKEW"

# --- ENOSPC: the writer decides between a low disk and a checkpoint that did not fit -------


@pytest.mark.parametrize(
    "log",
    [
        # pip 26.3's create_os_error_message, English
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device",
        # the same under a German locale, glued to pip's progress bar
        "   ━━━━━━━━━━━━━━╺━━━━━━━━━━━━ 0.8/2.3 GB 32.7 MB/s eta 0:00:45ERROR: Could not install "
        "packages due to an OSError: [Errno 28] Auf dem Gerät ist kein Speicherplatz mehr verfügbar",
        # pip < 21's wording, French strerror
        "ERROR: Could not install packages due to an EnvironmentError: [Errno 28] Aucun espace "
        "disponible sur le périphérique",
    ],
)
def test_pip_install_out_of_disk_is_disk_low(log):
    assert lead(log) == (DISK_LOW, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the Rust hf-hub client's ApiError::IoError under anyhow's report
        "Error: I/O error No space left on device (os error 28)\n\nCaused by:\n"
        "    No space left on device (os error 28)",
        # huggingface_hub's download frames above CPython's ENOSPC
        '  File "/x/site-packages/huggingface_hub/file_download.py", line 1710, in _download_to_tmp_and_move\n'
        "    http_get(\n"
        '  File "/x/site-packages/huggingface_hub/file_download.py", line 470, in http_get\n'
        "    temp_file.write(chunk)\n"
        "OSError: [Errno 28] No space left on device",
        # the ENOSPC names a path in the Hub cache, or a temp dir
        "OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/models--Qwen--Qwen2.5-7B/blobs/ab12.incomplete'",
        "OSError: [Errno 28] No space left on device: '/tmp/tmpk2x9/model.bin'",
    ],
)
def test_a_download_or_temp_file_out_of_disk_is_disk_low(log):
    assert lead(log) == (DISK_LOW, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # safetensors' own Rust error (`I/O error:` with a colon) saving a checkpoint
        "safetensors_rust.SafetensorError: Error while serializing: I/O error: No space left on "
        "device (os error 28)",
        # a checkpoint path, not a cache or a temp dir
        "OSError: [Errno 28] No space left on device: '/data/out/checkpoint-500/optimizer.pt'",
    ],
)
def test_a_checkpoint_save_out_of_disk_stays_the_checkpoint_reading(log):
    assert lead(log)[0] == CKPT
    assert DISK_LOW not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "cp: error writing 'model.bin': Auf dem Gerät ist kein Speicherplatz mehr verfügbar",
        "write error: На устройстве не осталось свободного места",
        "OSError: [Errno 28] 设备上没有空间",
    ],
)
def test_enospc_is_read_in_other_locales(log):
    assert CKPT in codes(log)


def test_pip_permission_denied_is_not_a_full_disk():
    log = (
        "ERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: "
        "'/usr/local/lib/python3.10/dist-packages/torch'"
    )
    assert DISK_LOW not in codes(log)
    assert CKPT not in codes(log)


def test_multiprocessing_semaphore_enospc_is_not_a_download():
    log = (
        "    sl = self._semlock = _multiprocessing.SemLock(\n"
        "OSError: [Errno 28] No space left on device: '/tmp/pymp-x/sem'"
    )
    assert DISK_LOW not in codes(log)


# --- a kill as the shell's job control or a progress bar shows it ---------------------------


@pytest.mark.parametrize(
    "log",
    [
        # zsh 5.9's printjob for a background job, lower case, with the pid
        "[1]    16261 killed     python3 -m llama.convert_llama --ckpt_dir $CKPT_DIR --model_size 65B",
        "[2]  + 4242 killed     python train.py",
        # bash 5.2's job notice
        "[1]+  Killed                  nohup python train.py > log.txt",
        # `Killed` printed where tqdm's nested bars left the cursor
        "Loading pipeline components...:  50%|█████▌     | 3/6 [00:51<00:49, 16.52s/itKilledng "
        "checkpoint shards:  78%|███████▌  | 7/9 [02:12<00:49, 24.82s/it]",
        "Loading checkpoint shards:  38%|██▊    | 3/8 [00:02<00:03,  1.28s/itKilled",
        "Loading checkpoint shards:  40%|████      | 2/5 [00:31<00:47, 15.80s/it]\n"
        "Killeding checkpoint shards:  60%|██████    | 3/5 [00:47<00:31, 15.80s/it]",
    ],
)
def test_shell_kill_notices_are_the_oom_hint(log):
    assert lead(log) == (OOM, "info")


def test_a_job_notice_with_the_kernel_record_is_an_oom_error():
    log = (
        "[1]+  Killed                  python train.py\n"
        "[12345.678901] Out of memory: Killed process 4242 (python) total-vm:81234567kB"
    )
    assert lead(log) == (OOM, "error")


def test_a_job_notice_under_wsl_is_the_wsl_ram_cap():
    log = "(venv) u@PC:/mnt/c/Users/u$ uname -r\n5.15.90.1-microsoft-standard-WSL2\n[1]+  Killed    python train.py"
    assert lead(log)[0] == "WSL_VM_RAM_CAP"


@pytest.mark.parametrize(
    "log",
    [
        # a job that ended, and words that merely contain `killed`
        "[1]+  Done                    python train.py",
        "[1]    16261 done       python3 convert.py",
        "Loading checkpoint shards:  50%|█████     | 2/4 [00:10<00:10,  5.00s/it] Skilled workers",
        "Training: 12%|█▏        | 120/1000 [01:00<07:20,  2.00it/s]Killedness is a word nobody uses",
        "INFO: the worker was not killed; retrying 3/5 it/s",
    ],
)
def test_other_job_notices_and_words_are_not_kills(log):
    assert OOM not in codes(log)


# --- CUDA headers missing in an extension build ---------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "cc1plus: fatal error: cuda_runtime.h: No such file or directory compilation terminated.",
        "      <command-line>: fatal error: cuda_runtime.h: No such file or directory",
        "/tmp/ext/src/ball_query.cpp:3:10: fatal error: cuda_runtime_api.h: No such file or directory",
        "csrc/kernel.cu:1:10: fatal error: 'cuda_runtime.h' file not found",
        "C:\\ext\\src\\op.cpp(3): fatal error C1083: Cannot open include file: 'cuda_runtime.h': "
        "No such file or directory",
    ],
)
def test_missing_cuda_headers_read_as_no_toolkit(log):
    assert lead(log) == (CUDA_HOME, "warning")


@pytest.mark.parametrize(
    "log",
    [
        "/tmp/x/main.c:6:10: fatal error: Python.h: No such file or directory",
        "src/op.cpp:2:10: fatal error: cuda_runtime_helpers.h: No such file or directory",
        "src/op.cpp:2:10: fatal error: mycuda.h: No such file or directory",
    ],
)
def test_other_missing_headers_are_not_the_cuda_toolkit(log):
    assert CUDA_HOME not in codes(log)


# --- a working or root-level output directory not writable ----------------------------------


@pytest.mark.parametrize(
    "log",
    [
        '"E:\\(folder name)\\LoRA_Easy_Training_Scripts-UI-Update-v1\\main.py", line 187, in main '
        "fp = open(\"config.json\", 'w')\n"
        "PermissionError: [Errno 13] Permission denied: 'config.json'",
        '  File "run.py", line 12, in <module>\n'
        "    with open('state', mode='a') as f:\n"
        "PermissionError: [Errno 13] Permission denied: 'state'",
        "PermissionError: [Errno 13] Permission denied: 'train_log.txt'",
    ],
)
def test_a_file_of_the_working_directory_not_writable(log):
    assert lead(log) == (WORKDIR, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # an executable named bare (subprocess), a path in a folder, a read of a file
        "PermissionError: [Errno 13] Permission denied: 'nvcc'",
        "PermissionError: [Errno 13] Permission denied: 'outputs/run1/config.json'",
        '  File "run.py", line 3, in <module>\n'
        "    data = open('secrets', 'r').read()\n"
        "PermissionError: [Errno 13] Permission denied: 'secrets'",
    ],
)
def test_other_permission_errors_are_not_the_working_directory(log):
    assert WORKDIR not in codes(log)


@pytest.mark.parametrize(
    "log",
    [
        "[Errno 13] Permission denied: '/results_diff'训练时出现这个错误，请问该如何解决？",
        "PermissionError: [Errno 13] Permission denied: '/outputs'",
        "PermissionError: [Errno 13] Permission denied: '/checkpoints-llama'",
    ],
)
def test_an_output_directory_at_the_root_is_not_writable(log):
    assert lead(log) == (OUTDIR, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # an author's data path a configuration still names: an input, not an output
        "请问 PermissionError: [Errno 13] Permission denied: '/gruntdata' 这个问题怎么解决？",
        "PermissionError: [Errno 13] Permission denied: '/root'",
        "PermissionError: [Errno 13] Permission denied: '/results_diff/epoch_1/model.pt'",
    ],
)
def test_other_root_level_paths_are_not_read_as_an_output_directory(log):
    assert OUTDIR not in codes(log)


# --- a model class that misses what transformers 5's post_init sets -------------------------


@pytest.mark.parametrize(
    "log",
    [
        # the reported one-liner (torch's nn.Module.__getattr__ with Python's suggestion)
        "AttributeError: 'CLSPModel' object has no attribute 'all_tied_weights_keys'. "
        "Did you mean: '_tied_weights_keys'?",
        # from_pretrained's own frames, as transformers 5.24 raises it
        '  File "/x/site-packages/transformers/modeling_utils.py", line 4871, in _move_missing_keys_from_meta_to_device\n'
        "    for key in missing_keys - self.all_tied_weights_keys.keys():\n"
        '  File "/x/site-packages/torch/nn/modules/module.py", line 1967, in __getattr__\n'
        "    raise AttributeError(\n"
        "AttributeError: 'M' object has no attribute 'all_tied_weights_keys'. Did you mean: '_tied_weights_keys'?",
        # a 4.x list of _tied_weights_keys in 5's get_expanded_tied_weights_keys
        '  File "/x/site-packages/transformers/modeling_utils.py", line 2502, in get_expanded_tied_weights_keys\n'
        "    if all(common_case_regex.match(k) for k in tied_mapping.keys() | tied_mapping.values()):\n"
        "                                               ^^^^^^^^^^^^^^^^^\n"
        "AttributeError: 'list' object has no attribute 'keys'",
    ],
)
def test_a_model_written_for_transformers_4_is_skew(log):
    assert lead(log) == (SKEW, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the user's own typo of the attribute, and a list's .keys() in the user's own code
        "AttributeError: 'MyModel' object has no attribute 'all_tied_weight_keys'",
        '  File "train.py", line 40, in build\n'
        "    for k in cfg.keys():\n"
        "AttributeError: 'list' object has no attribute 'keys'",
    ],
)
def test_near_misses_of_the_post_init_attribute_are_not_skew(log):
    assert SKEW not in codes(log)
