"""Readings learned from CPU fault batch 2a (limits the host or job sets, caches and
outputs that cannot be written, weights files cut short), on text shapes beyond the
recordings: other runtimes' and releases' wordings, lower-cased pastes, launcher
prefixes, Windows paths, a Chinese locale. Codes and severities only (wording:
codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# --- PROCESS_LIMIT_REACHED ----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "libgomp: thread creation failed: resource temporarily unavailable",
        "OpenBLAS blas_thread_init: pthread_create failed for thread 3 of 64: Resource temporarily"
        " unavailable\nOpenBLAS blas_thread_init: RLIMIT_NPROC 4096 current, 4096 max",
        "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort",
        "thread 'main' panicked at library/std/src/thread/mod.rs:722:29:\nfailed to spawn thread:"
        ' Os { code: 11, kind: WouldBlock, message: "Resource temporarily unavailable" }',
        "bash: fork: retry: 资源暂时不可用",
        "[rank0]: terminate called after throwing an instance of 'std::system_error'\n"
        "[rank0]:   what():  Resource temporarily unavailable",
        '  File "/usr/lib/python3.8/subprocess.py", line 1702, in _execute_child\n'
        "    self.pid = _posixsubprocess.fork_exec(\n"
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
    ],
)
def test_eagain_from_creating_a_process_or_thread_is_the_limit_reached(log):
    assert readings(log)[0] == ("PROCESS_LIMIT_REACHED", "error")


THREAD_POOL = (
    '  File "/usr/lib/python3.10/concurrent/futures/thread.py", line 199, in _adjust_thread_count\n'
    "    t.start()\n"
    '  File "/usr/lib/python3.10/threading.py", line 935, in start\n'
    "    _start_new_thread(self._bootstrap, ())\n"
    "RuntimeError: can't start new thread\n"
)


def test_pythons_errno_less_thread_failure_is_a_warning():
    # a thread stack refused under ulimit -v reads the same, so not error-level alone
    assert readings(THREAD_POOL)[0] == ("PROCESS_LIMIT_REACHED", "warning")
    assert readings("[rank3]: runtimeerror: can't start new thread")[0] == (
        "PROCESS_LIMIT_REACHED",
        "warning",
    )


@pytest.mark.parametrize(
    "shown",
    ["$ cat /sys/fs/cgroup/pids.max\n512", "docker run --pids-limit 100 trainer", "ulimit -u 64"],
)
def test_pythons_thread_failure_with_the_limit_shown_is_an_error(shown):
    assert readings(f"{shown}\n{THREAD_POOL}")[0] == ("PROCESS_LIMIT_REACHED", "error")


@pytest.mark.parametrize(
    "log",
    [
        # 3.12+: a thread started while the interpreter exits, no limit involved
        "RuntimeError: can't create new thread at interpreter shutdown",
        # a non-blocking socket's EAGAIN, no fork
        '  File "/x/site-packages/zmq/sugar/socket.py", line 804, in recv\n'
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "libgomp: Thread creation failed: Cannot allocate memory",
    ],
)
def test_other_eagain_and_thread_texts_are_not_a_process_limit(log):
    assert "PROCESS_LIMIT_REACHED" not in codes(log)


# --- ADDRESS_SPACE_LIMIT ------------------------------------------------------------------

CPU_ALLOC = (
    "RuntimeError: [enforce fail at CPUAllocator.cpp:64] . DefaultCPUAllocator: can't allocate"
    " memory: you tried to allocate 35389440000 bytes. Error code 12 (Cannot allocate memory)"
)


def test_torchs_cpu_allocation_refused_alone_is_a_hint():
    # the same text when the host is short of RAM: no limit in the log, no evidence
    assert readings(CPU_ALLOC)[0] == ("ADDRESS_SPACE_LIMIT", "info")
    assert readings(CPU_ALLOC.lower())[0] == ("ADDRESS_SPACE_LIMIT", "info")


@pytest.mark.parametrize(
    "shown",
    [
        "+ ulimit -v 8000000",
        "virtual memory          (kbytes, -v) 4194304",
        "#$ -l h_vmem=4G",
        "setrlimit(RLIMIT_AS) = 2 GiB",
    ],
)
def test_a_refused_allocation_under_a_shown_address_space_limit_is_an_error(shown):
    assert readings(f"{shown}\n{CPU_ALLOC}")[0] == ("ADDRESS_SPACE_LIMIT", "error")
    assert readings(f"{shown}\nMemoryError")[0] == ("ADDRESS_SPACE_LIMIT", "error")


def test_an_unlimited_address_space_is_no_evidence():
    log = f"virtual memory          (kbytes, -v) unlimited\n{CPU_ALLOC}"
    assert readings(log)[0] == ("ADDRESS_SPACE_LIMIT", "info")


def test_a_refused_file_mapping_is_a_warning():
    log = (
        '  File "/x/site-packages/numpy/core/memmap.py", line 267, in __new__\n'
        "    mm = mmap.mmap(fid.fileno(), bytes, access=acc, offset=start)\n"
        "OSError: [Errno 12] Cannot allocate memory"
    )
    assert readings(log)[0] == ("ADDRESS_SPACE_LIMIT", "warning")


def test_ray_out_of_memory_is_not_an_address_space_limit():
    oom = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
    assert "ADDRESS_SPACE_LIMIT" not in codes(f"ulimit -v 8000000\n{oom}")


def test_cuda_out_of_memory_under_a_shown_limit_is_at_most_a_warning():
    # CUDA maps the GPU's memory into the address space (an H100 needs 16-24 GiB for its
    # first use), so the limit is the likely cause, but a full GPU prints the same words
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert readings(f"ulimit -v 8000000\n{oom}")[0] == ("ADDRESS_SPACE_LIMIT", "warning")


# --- CACHE_DIR_NOT_WRITABLE / OUTPUT_DIR_NOT_WRITABLE -------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "PermissionError: [WinError 5] Access is denied: 'C:\\\\Users\\\\me\\\\.cache\\\\huggingface"
        "\\\\hub\\\\models--Qwen--Qwen2-0.5B\\\\blobs\\\\a1b2.incomplete'",
        "[rank0]: PermissionError: [Errno 13] Permission denied:"
        " '/root/.cache/huggingface/hub/.locks/models--Qwen--Qwen2-0.5B/a1b2.lock'",
        "oserror: [errno 30] read-only file system: '/home/u/.triton/cache/0f3a'",
        '  File "/x/site-packages/torch/_inductor/codecache.py", line 540, in write_atomic\n'
        "    with tmp_path.open(write_mode) as f:\n"
        "PermissionError: [Errno 13] Permission denied: '/scratch/shared/ab/c3x.py'",
    ],
)
def test_a_cache_that_cannot_be_written_is_named(log):
    assert readings(log)[0] == ("CACHE_DIR_NOT_WRITABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        '  File "/x/site-packages/transformers/trainer.py", line 3311, in _save_checkpoint\n'
        "    self._save_rng_state(run_dir)\n"
        '  File "/x/site-packages/torch/serialization.py", line 652, in _open_zipfile_writer\n'
        "PermissionError: [Errno 13] Permission denied: '/mnt/out/rng_state.pth'",
        "PermissionError: [WinError 5] 拒绝访问。: 'D:\\\\runs\\\\qwen\\\\checkpoint-200'",
    ],
)
def test_an_output_dir_that_cannot_be_written_is_named(log):
    assert readings(log)[0] == ("OUTPUT_DIR_NOT_WRITABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        '  File "train.py", line 12, in <module>\n'
        '    with open("/data/train.jsonl") as f:\n'
        "PermissionError: [Errno 13] Permission denied: '/data/train.jsonl'",
        "PermissionError: [Errno 13] Permission denied: '/mnt/datasets/shop/train.json'",
    ],
)
def test_the_users_own_data_file_is_neither_a_cache_nor_an_output(log):
    found = codes(log)
    assert "CACHE_DIR_NOT_WRITABLE" not in found and "OUTPUT_DIR_NOT_WRITABLE" not in found


# --- CHECKPOINT_TRUNCATED -----------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "RuntimeError: [enforce fail at inline_container.cc:145] . PytorchStreamReader failed"
        " reading zip archive: failed finding central directory",
        "[rank1]: runtimeerror: pytorchstreamreader failed reading zip archive: failed finding"
        " central directory",
        "RuntimeError: unexpected EOF, expected 1234567 more bytes. The file might be corrupted.",
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
    ],
)
def test_a_weights_file_cut_short_is_named(log):
    assert readings(log)[0] == ("CHECKPOINT_TRUNCATED", "error")


@pytest.mark.parametrize(
    "line",
    [
        "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
        "safetensors_rust.SafetensorError: Error while deserializing header: header too large",
    ],
)
def test_a_header_too_large_is_not_a_truncated_file(line):
    # a valid file with a huge header (or no safetensors file at all) reads so
    assert "CHECKPOINT_TRUNCATED" not in codes(line)


# --- DATALOADER_FD_LIMIT ------------------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "[rank0]: RuntimeError: unable to open shared memory object </torch_1234_567_8> in"
        " read-write mode: Too many open files (24)",
        "RuntimeError: unable to open shared memory object </torch_1_2_3> in read-write mode:"
        " 打开的文件过多 (24)",
        '  File "/x/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch\n'
        "    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
        "OSError: [Errno 24] Too many open files: '/data/img/0001.jpg'",
    ],
)
def test_open_files_exhausted_by_dataloader_workers_is_an_error(log):
    assert readings(log)[0] == ("DATALOADER_FD_LIMIT", "error")


@pytest.mark.parametrize(
    "log",
    [
        "训练到一半报错 OSError: [Errno 24] Too many open files",
        "accept tcp [::]:8080: accept4: too many open files",
    ],
)
def test_open_files_exhausted_without_a_dataloader_is_a_hint(log):
    # a program that leaves files open reads the same
    assert readings(log)[0] == ("DATALOADER_FD_LIMIT", "info")
