"""A write into /dev/shm whose ENOSPC names no file (a file object's write) after a line
naming the /dev/shm file: /dev/shm filled (recorded: a container run with --shm-size 1m).
Codes and severities (wording: codes.yaml)."""

from __future__ import annotations

from logscan_readings import codes, lead

WRITE = (
    "caching features to /dev/shm/features.bin\n"
    "Traceback (most recent call last):\n"
    '  File "/app/train.py", line 4, in <module>\n'
    "    f.write(bytes(1024 * 1024))\n"
    "OSError: [Errno 28] No space left on device\n"
    "docker run exited with status 1\n"
)


def test_enospc_after_a_dev_shm_file_is_the_shm_mount():
    assert lead(WRITE) == ("CONTAINER_SHM_TOO_SMALL", "error")


def test_the_source_line_naming_dev_shm_reads_the_same():
    log = (
        "Traceback (most recent call last):\n"
        '  File "cache.py", line 9, in <module>\n'
        '    open("/dev/shm/feats.npy", "wb").write(buf)\n'
        "OSError: [Errno 28] No space left on device\n"
    )
    assert lead(log) == ("CONTAINER_SHM_TOO_SMALL", "error")


def test_enospc_naming_another_file_is_not_the_shm_mount():
    log = (
        "staging batches in /dev/shm/stage\n"
        "OSError: [Errno 28] No space left on device: '/data/out/checkpoint-500/model.bin'\n"
    )
    assert "CONTAINER_SHM_TOO_SMALL" not in codes(log)


def test_dev_shm_named_far_above_the_enospc_is_not_enough():
    log = "shared buffers at /dev/shm/buf\n" + "step 1 loss 0.5\n" * 30
    log += "OSError: [Errno 28] No space left on device\n"
    assert "CONTAINER_SHM_TOO_SMALL" not in codes(log)
