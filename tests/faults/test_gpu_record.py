"""The GPU recorder's parts that need no GPU: which cases run, how each is launched, how a
hang ends, and that what it writes is the corpus's recording format."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from . import gpu_faults, gpu_record
from .gpu_cases import CASES
from .suite import load_recordings
from .verdict_gpu import check_gpu_diagnosis

BY_NAME = {c.name: c for c in CASES}


@pytest.mark.parametrize("batch", sorted({c.batch for c in CASES}))
def test_each_batch_is_bounded_and_fits_one_call(batch: int):
    cases = [c for c in CASES if c.batch == batch]
    # a hang ends well inside a call; a case that builds a CUDA extension with nvcc
    # (load_inline) takes minutes, and says so in its cause
    assert all(c.timeout <= 90 or (c.timeout <= 240 and "nvcc" in c.cause) for c in cases)
    holders = sum(gpu_record.HOLDER_WAIT_S for c in cases if gpu_record.holder_argv(c))
    assert sum(c.timeout for c in cases) + holders <= gpu_record.BUDGET_S < 480
    assert all(callable(getattr(gpu_faults, c.name)) for c in cases)


def test_the_holder_holds_a_share_or_all_but_some_mib():
    share, leaving = BY_NAME["vllm_memory_taken"], BY_NAME["context_on_full_gpu"]
    assert gpu_record.holder_argv(share)[-2:] == ["hold_memory", "0.6"]
    assert gpu_record.holder_argv(leaving)[-2:] == ["hold_memory_leaving", "100"]
    assert gpu_record.holder_argv(BY_NAME["cuda_oom"]) is None


def test_two_rank_cases_go_through_torchrun_with_the_case_env():
    case = BY_NAME["ranks_one_gpu"]
    work = Path("/tmp/shop-r1-ranks_one_gpu-abc")
    argv = gpu_record.build_argv(case, work, python="/venv/bin/python")
    assert argv == [
        "/venv/bin/python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
        "-m", "tests.faults.gpu_faults", "ranks_one_gpu", str(work),
    ]  # fmt: skip
    assert gpu_record.command_line(case, argv, work) == (
        "NCCL_DEBUG=WARN python -m torch.distributed.run --standalone --nproc-per-node=2"
        " -m tests.faults.gpu_faults ranks_one_gpu /tmp/shop-r1-fault"
    )


def test_hidden_gpus_are_an_empty_variable_in_the_command():
    case = BY_NAME["gpus_hidden_to_cuda"]
    work = Path("/tmp/w")
    argv = gpu_record.build_argv(case, work, python="python")
    assert argv == ["python", "-m", "tests.faults.gpu_faults", "gpus_hidden_to_cuda", "/tmp/w"]
    assert gpu_record.command_line(case, argv, work).startswith("CUDA_VISIBLE_DEVICES='' python -m")


@pytest.mark.parametrize(
    ("name", "gpus", "missing", "why"),
    [
        ("nccl_timeout", 1, set(), "needs 2 GPUs, this machine has 1"),
        ("nccl_timeout", 2, set(), None),
        ("ranks_one_gpu", 1, set(), None),
        ("vllm_memory_taken", 1, {"vllm"}, "needs vllm (not importable here)"),
        ("gpus_hidden_trl_bf16", 8, {"trl"}, "needs trl (not importable here)"),
    ],
)
def test_skip_reasons(name, gpus, missing, why):
    assert gpu_record.skip_reason(BY_NAME[name], gpus, lambda m: m not in missing) == why


def _fake_smi(stdout: str, code: int = 0):
    def run(argv, **kw):
        return subprocess.CompletedProcess(argv, code, stdout, "")

    return run


def test_gpu_count_reads_nvidia_smi():
    listing = (
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n"
    )
    assert gpu_record.gpu_count(_fake_smi(listing)) == 2
    assert gpu_record.gpu_count(_fake_smi("", code=9)) == 0
    assert gpu_record.gpu_versions(_fake_smi("NVIDIA H100 80GB HBM3, 570.86.15, 81559 MiB\n")) == {
        "gpu": "1 x NVIDIA H100 80GB HBM3 (81559 MiB)",
        "nvidia_driver": "570.86.15",
    }


def test_a_hanging_case_is_killed_with_its_whole_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {pidfile}; echo started; wait"
    t0 = time.monotonic()
    output, code = gpu_record.run_bounded(["bash", "-c", script], dict(os.environ), timeout=2)
    assert time.monotonic() - t0 < 20
    assert code == 124
    assert "started" in output and "[timed out after 2 s; its process group was killed]" in output
    grandchild = int(pidfile.read_text())
    for _ in range(50):  # reaped by init shortly after the kill
        if not Path(f"/proc/{grandchild}").exists() or "Z" in _state(grandchild):
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{grandchild}").exists() or "Z" in _state(grandchild)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except OSError:
        return "Z"


def test_a_failing_command_keeps_its_output_and_status():
    output, code = gpu_record.run_bounded(
        [sys.executable, "-c", "import sys; print('out'); sys.exit('boom')"], dict(os.environ), 30
    )
    assert code == 1 and "out" in output and "boom" in output


def test_the_pasted_environment_runs_in_the_case_env_and_keeps_failures():
    """Each command under its typed form, in order, run with the case's variables; one
    that is not installed, fails or hangs is kept as the reporter would paste it."""
    env = gpu_record.case_env(BY_NAME["gpus_hidden_to_cuda"], os.environ)
    commands = (
        (
            "python -c show",
            ("{python}", "-c", "import os; print(repr(os.environ['CUDA_VISIBLE_DEVICES']))"),
        ),
        ("nvidia-smi", ("/nonexistent/nvidia-smi",)),
        ("python -c boom", ("{python}", "-c", "import sys; sys.exit('boom')")),
        ("sleep", ("sleep", "30")),
    )
    t0 = time.monotonic()
    text, codes = gpu_record.capture_environment(env, timeout=2, commands=commands)
    assert time.monotonic() - t0 < 20  # side by side, each bounded
    assert codes == {"python -c show": 0, "nvidia-smi": 127, "python -c boom": 1, "sleep": 124}
    heads = [line for line in text.splitlines() if line.startswith("$ ")]
    assert heads == ["$ python -c show", "$ nvidia-smi", "$ python -c boom", "$ sleep"]
    assert "$ python -c show\n''\n" in text  # CUDA_VISIBLE_DEVICES='' as the case had it
    assert "No such file or directory" in text and "boom" in text and "timed out" in text


def test_the_recording_is_the_corpus_format_and_is_read_as_one(tmp_path):
    case = BY_NAME["cuda_oom"]
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 118.79 GiB. GPU 0 has a"
        " total capacity of 79.19 GiB of which 78.68 GiB is free.\n"
    )
    meta = gpu_record.metadata(
        case, "python -m tests.faults.gpu_faults cuda_oom /tmp/x", 1, {"torch": "2.13.0"}
    )
    gpu_record.write_recording(tmp_path, case, f"{sys.prefix}/lib/x.py\n{log}", meta)
    [rec] = load_recordings(tmp_path, families=("gpu",))
    assert (rec.family, rec.case, rec.expected) == ("gpu", "cuda_oom", ("GPU_OUT_OF_MEMORY",))
    assert rec.meta["schema"] == "shop-r1.fault-case/1" and rec.meta["exit_code"] == 1
    assert rec.log.startswith("<venv>/lib/x.py\n")  # this machine's paths are not kept
    check_gpu_diagnosis(rec)


def test_a_recording_whose_failure_did_not_happen_fails_the_guard(tmp_path):
    case = BY_NAME["ranks_one_gpu"]
    meta = gpu_record.metadata(case, "torchrun ...", 0, {})
    gpu_record.write_recording(tmp_path, case, "rank 0: all_reduce gave 2.0\n", meta)
    [rec] = load_recordings(tmp_path, families=("gpu",))
    with pytest.raises(AssertionError, match="exited 0"):
        check_gpu_diagnosis(rec)


def test_main_without_a_gpu_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # no nvidia-smi here
    assert gpu_record.main(["--out", str(tmp_path)]) == 2
    assert "no NVIDIA GPU visible" in capsys.readouterr().out


def test_a_case_child_imports_what_the_recorder_imports(tmp_path):
    """On the GPU machine TRL and vLLM come from a carried tree on PYTHONPATH: the
    recorder saw them (the case was not skipped) while the child, given only the
    checkout, printed "No module named 'vllm'" in place of the failure."""
    carried = tmp_path / "carried"
    carried.mkdir()
    (carried / "carried_pkg.py").write_text("VERSION = '1.0'\n")
    env = gpu_record.case_env(
        BY_NAME["vllm_memory_taken"], {**os.environ, "PYTHONPATH": str(carried)}
    )
    code = "import carried_pkg, tests.faults.gpu_faults; print(carried_pkg.VERSION)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert (out.returncode, out.stdout.strip()) == (0, "1.0"), out.stderr
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(gpu_record.ROOT)
    assert gpu_record.case_env(BY_NAME["gpus_hidden_to_cuda"], {})["CUDA_VISIBLE_DEVICES"] == ""


def test_a_small_shm_case_runs_in_its_own_mount_namespace():
    case = BY_NAME["nccl_small_shm"]
    work = Path("/tmp/w")
    argv = gpu_record.build_argv(case, work, python="/venv/bin/python")
    assert argv[:4] == ["unshare", "-m", "--propagation", "private"]
    assert "mount -t tmpfs -o size=1m tmpfs /dev/shm" in argv[6]
    assert argv[8:11] == ["/venv/bin/python", "-m", "torch.distributed.run"]
    assert gpu_record.build_argv(BY_NAME["nccl_net_ib_forced"], work, python="p")[0] == "p"


def test_a_vmem_case_sets_the_limit_before_python_starts():
    argv = gpu_record.build_argv(BY_NAME["cuda_under_vmem_limit"], Path("/tmp/w"), python="py")
    assert argv[:3] == ["bash", "-c", f'ulimit -v {16 * 2**20} && exec "$@"']
    assert argv[4:7] == ["py", "-m", "tests.faults.gpu_faults"]


def test_a_work_tmpfs_case_mounts_its_own_work_directory():
    case = BY_NAME["torch_save_cuda_checkpoint_disk_full"]
    work = Path("/tmp/shop-r1-x")
    argv = gpu_record.build_argv(case, work, python="py")
    assert argv[:4] == ["unshare", "-m", "--propagation", "private"]
    assert argv[6] == f'mount -t tmpfs -o size=8m tmpfs {work} && exec "$@"'
    assert argv[8:12] == ["py", "-m", "tests.faults.gpu_faults", case.name]
    assert gpu_record.command_line(case, argv, work).count(gpu_record.SCRATCH) == 2


def _hiding_tree(root: Path) -> None:
    """A library directory, a tool and a cache as the hide cases meet them."""
    (root / "lib").mkdir()
    (root / "lib" / "libfoo.so.13").write_text("foo")
    (root / "lib" / "libfoo.so").symlink_to("libfoo.so.13")
    (root / "lib" / "libbar.so.13").write_text("bar")
    (root / "lib" / "sub").mkdir()
    (root / "lib" / "sub" / "kept").write_text("kept")
    (root / "lib" / "rel").symlink_to("libbar.so.13")
    (root / "bin").mkdir()
    (root / "bin" / "tool").write_text("#!/bin/sh\necho ran\n")
    (root / "bin" / "tool").chmod(0o755)
    (root / "cache").mkdir()
    (root / "cache" / "entry").write_text("cached")
    (root / "cuda-13.0" / "lib").mkdir(parents=True)
    (root / "cuda-13.0" / "lib" / "libfoo.so.13").write_text("toolkit foo")
    (root / "cuda").symlink_to("cuda-13.0")


def test_hide_globs_resolve_site_ldpath_and_each_directory_once(tmp_path):
    _hiding_tree(tmp_path)
    case = dataclasses.replace(
        BY_NAME["cublas_libs_hidden"],
        hide=(
            "{site}/lib/libfoo*",
            "{ldpath}/libfoo*",
            f"{tmp_path}/cuda*/lib/libfoo*",
            f"null:{tmp_path}/bin/tool",
            f"{tmp_path}/cache",
            "{site}/nothing-here*",
        ),
    )
    ldpath = {"LD_LIBRARY_PATH": f"{tmp_path}/cuda/lib::/nonexistent"}
    found = gpu_record.hidden_paths(case, ldpath, site=str(tmp_path))
    assert found == [
        (False, f"{tmp_path}/lib/libfoo.so"),
        (False, f"{tmp_path}/lib/libfoo.so.13"),
        (False, f"{tmp_path}/cuda-13.0/lib/libfoo.so.13"),  # through cuda/ and cuda-13.0/: once
        (True, f"{tmp_path}/bin/tool"),
        (False, f"{tmp_path}/cache"),
    ]
    assert gpu_record.hide_args(found) == [
        "--null", f"{tmp_path}/bin/tool",
        "--empty", f"{tmp_path}/cache",
        "--leave", f"{tmp_path}/cuda-13.0/lib", "libfoo.so.13",
        "--leave", f"{tmp_path}/lib", "libfoo.so,libfoo.so.13",
    ]  # fmt: skip


def test_a_case_hiding_what_this_machine_lacks_is_skipped(tmp_path):
    case = dataclasses.replace(BY_NAME["uvm_device_hidden"], hide=(f"{tmp_path}/nvidia-uvm*",))
    assert gpu_record.skip_reason(case, 1) == (
        f"nothing here matches what it hides ({tmp_path}/nvidia-uvm*)"
    )
    (tmp_path / "nvidia-uvm").write_text("")
    assert gpu_record.skip_reason(case, 1) is None


def _namespace_works() -> bool:
    try:
        probe = ["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "t", "/mnt"]
        return subprocess.run(probe, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _namespace_works(), reason="no private mount namespace here (needs root)")
def test_hidden_paths_are_gone_inside_the_case_and_untouched_outside(tmp_path):
    _hiding_tree(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    case = dataclasses.replace(
        BY_NAME["cublas_libs_hidden"],
        hide=(f"{tmp_path}/lib/libfoo*", f"null:{tmp_path}/bin/tool", f"{tmp_path}/cache"),
    )
    argv = gpu_record.build_argv(case, work, python=sys.executable)
    assert argv[:8] == [
        "unshare", "-m", "--propagation", "private",
        sys.executable, "-m", "tests.faults.gpu_hide", "--stage",
    ]  # fmt: skip
    assert argv[-4:] == ["-m", "tests.faults.gpu_faults", case.name, str(work)]
    assert gpu_record.command_line(case, argv, work).startswith(
        "unshare -m --propagation private python -m tests.faults.gpu_hide --stage"
        f" {gpu_record.SCRATCH} --null"
    )
    lib = tmp_path / "lib"
    look = (
        f"ls -A {lib}; cat {lib}/libbar.so.13 {lib}/sub/kept {lib}/rel; echo;"
        f" {tmp_path}/bin/tool || echo tool-not-run; ls -A {tmp_path}/cache;"
        f" mknod {lib}/made c 1 3 && (cat {lib}/made || echo made-not-opened); echo end"
    )
    inside = [*argv[: argv.index("--") + 1], "sh", "-c", look]
    env = {**os.environ, "PYTHONPATH": str(gpu_record.ROOT)}
    proc = subprocess.run(inside, capture_output=True, text=True, cwd=gpu_record.ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    # the hidden library gone, the rest readable (a link too), the tool not run, the cache
    # empty, and a node made there again cannot be opened (nodev)
    seen = ["libbar.so.13", "rel", "sub", "barkeptbar", "tool-not-run", "made-not-opened", "end"]
    assert proc.stdout.split() == seen
    # outside the namespace nothing changed
    assert sorted(p.name for p in lib.iterdir()) == [
        "libbar.so.13", "libfoo.so", "libfoo.so.13", "rel", "sub"
    ]  # fmt: skip
    assert (tmp_path / "cache" / "entry").read_text() == "cached"
    ran = subprocess.run([str(tmp_path / "bin" / "tool")], capture_output=True, text=True)
    assert ran.stdout == "ran\n"


def test_a_user_bug_recording_passes_with_no_cause_and_fails_with_an_error_claim(tmp_path):
    case = BY_NAME["user_tensor_left_on_cpu"]
    assert case.expected == ()
    meta = gpu_record.metadata(case, "python -m tests.faults.gpu_faults x /tmp/x", 1, {"t": "1"})
    log = "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!\n"
    gpu_record.write_recording(tmp_path / "a", case, log, meta)
    [rec] = load_recordings(tmp_path / "a", families=("gpu",))
    check_gpu_diagnosis(rec)
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    gpu_record.write_recording(tmp_path / "b", case, log + oom, meta)
    [rec] = load_recordings(tmp_path / "b", families=("gpu",))
    with pytest.raises(AssertionError, match="a user bug reported as"):
        check_gpu_diagnosis(rec)
