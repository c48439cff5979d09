"""uv's refusal of a version without a wheel or sdist for this interpreter and its tag hints
(uv 0.12.5 lock/mod.rs, pubgrub/report.rs), Triton's ptxas without a Blackwell arch, and
the raylet's plasma store asking /dev/shm for more than is free. Codes and severities
(wording: codes.yaml)."""

from __future__ import annotations

from logscan_readings import codes, lead

REFUSAL = (
    "error: Distribution `{pkg} @ registry+https://pypi.org/simple` can't be installed"
    " because it doesn't have a source distribution or wheel for the current platform\n"
)


def _uv_sync(pkg: str, hint: str) -> str:
    return (
        "Using CPython 3.13.9 interpreter at: /home/u/miniconda3/bin/python3\n"
        "Creating virtual environment at: .venv\n"
        "Resolved 94 packages in 6.46s\n" + REFUSAL.format(pkg=pkg) + "\n" + hint + "\n"
    )


# --- uv's refusal ---


def test_uv_refusal_alone_is_no_release_for_this_platform():
    # uv 0.12.5 lock/mod.rs:7415, printed with no hint (a wheel for another OS only)
    assert lead(REFUSAL.format(pkg="torch==2.8.0")) == ("NO_RELEASE_FOR_THIS_PLATFORM", "warning")


def test_uv_refusal_cut_before_the_distribution_reads_the_same():
    log = (
        "When I use python 3.13 on windows and run `uv add torch`\n"
        "happened `@ registry+https://pypi.org/simple` can't be installed because it doesn't"
        " have a source distribution or wheel for the current platform`\n"
    )
    assert lead(log) == ("NO_RELEASE_FOR_THIS_PLATFORM", "warning")


def test_uv_pip_sync_package_form_and_resolver_reason_read_the_same():
    pylock = (
        "error: Package `torch` can't be installed because it doesn't have a source"
        " distribution or wheel for the current platform\n"
    )
    resolver = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because a==1.0.0 has no wheels with a matching platform tag (e.g.,"
        " `manylinux_2_17_x86_64`) and only a==1.0.0 is available, we can conclude that all"
        " versions of a cannot be used.\n"
    )
    assert lead(pylock)[0] == "NO_RELEASE_FOR_THIS_PLATFORM"
    assert lead(resolver)[0] == "NO_RELEASE_FOR_THIS_PLATFORM"


def test_a_build_failure_of_uv_is_not_a_missing_wheel():
    log = (
        "error: Failed to build `flash-attn==2.8.3`\n"
        "  ├─▶ The build backend returned an error\n"
        "  ╰─▶ Call to `setuptools.build_meta.build_wheel` failed (exit status: 1)\n"
    )
    assert "NO_RELEASE_FOR_THIS_PLATFORM" not in codes(log)


# --- uv's Python tag hints ---


def test_python_newer_than_every_offered_abi_tag_is_too_new():
    log = _uv_sync(
        "tensorflow==2.15.0",
        "hint: You're using CPython 3.13 (`cp313`), but `tensorflow` (v2.15.0) only has wheels"
        " with the following Python ABI tags: `cp39`, `cp310`, `cp311`",
    )
    assert lead(log) == ("PYTHON_TOO_NEW_FOR_PACKAGE", "error")
    assert "NO_RELEASE_FOR_THIS_PLATFORM" in codes(log)


def test_free_threaded_tags_below_the_interpreter_are_too_new():
    log = _uv_sync(
        "torch==2.8.0",
        "hint: You're using CPython 3.14 (`cp314`), but `torch` (v2.8.0) only has wheels with"
        " the following Python ABI tags: `cp312`, `cp313`, `cp313t`",
    )
    assert lead(log) == ("PYTHON_TOO_NEW_FOR_PACKAGE", "error")


def test_resolver_hint_with_an_older_interpreter_is_too_old():
    # uv 0.12.5 pubgrub/report.rs:2262 (uv pip install), its own test's wording
    log = (
        "hint: You require CPython 3.12 (`cp312`), but we only found wheels for `a` (v1.0.0)"
        " with the following Python ABI tag: `cp313`\n"
    )
    assert lead(log) == ("PYTHON_TOO_OLD_FOR_PACKAGE", "error")


def test_single_digit_interpreter_below_two_digit_tags_is_too_old():
    log = REFUSAL.format(pkg="torch==2.2.1") + (
        "hint: You're using CPython 3.8 (`cp38`), but `torch` (v2.2.1) only has wheels with the"
        " following Python implementation tag: `cp312`\n"
    )
    assert lead(log) == ("PYTHON_TOO_OLD_FOR_PACKAGE", "error")


def test_tags_on_both_sides_of_the_interpreter_are_neither():
    log = _uv_sync(
        "x==1.0",
        "hint: You're using CPython 3.12 (`cp312`), but `x` (v1.0) only has wheels with the"
        " following Python ABI tags: `cp311`, `cp313`",
    )
    found = codes(log)
    assert found[0] == "NO_RELEASE_FOR_THIS_PLATFORM"
    assert "PYTHON_TOO_NEW_FOR_PACKAGE" not in found
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in found


def test_python_3_10_against_3_9_and_3_11_is_neither():
    # 3.10 sits between a one-digit and a two-digit minor: no digit-wise mistake
    log = _uv_sync(
        "x==1.0",
        "hint: You're using CPython 3.10 (`cp310`), but `x` (v1.0) only has wheels with the"
        " following Python ABI tags: `cp39`, `cp311`",
    )
    found = codes(log)
    assert "PYTHON_TOO_NEW_FOR_PACKAGE" not in found
    assert "PYTHON_TOO_OLD_FOR_PACKAGE" not in found


def test_python_3_10_above_3_8_and_3_9_is_too_new():
    log = _uv_sync(
        "x==1.0",
        "hint: You're using CPython 3.10 (`cp310`), but `x` (v1.0) only has wheels with the"
        " following Python ABI tags: `cp38`, `cp39`",
    )
    assert lead(log)[0] == "PYTHON_TOO_NEW_FOR_PACKAGE"


def test_platform_hint_is_not_a_python_version_matter():
    log = REFUSAL.format(pkg="a==1.0.0") + (
        "hint: You're on Linux (`manylinux_2_39_x86_64`), but `a` (v1.0.0) only has wheels for"
        " the following platform: `macosx_10_0_ppc64`\n"
    )
    found = codes(log)
    assert found[0] == "NO_RELEASE_FOR_THIS_PLATFORM"
    assert "PYTHON_TOO_NEW_FOR_PACKAGE" not in found


# --- Triton's ptxas without the GPU's arch ---

PTXAS = (
    "RuntimeError: Internal Triton PTX codegen error\n"
    "`ptxas` stderr:\n"
    "ptxas fatal   : Value '{arch}' is not defined for option 'gpu-name'\n\n"
    "Repro command: /home/u/envs/z/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas"
    " -lineinfo -v --gpu-name={arch} /tmp/tmpx.ptx -o /tmp/tmpx.ptx.o\n"
)


def test_triton_ptxas_without_sm_120_is_no_blackwell_arch():
    assert lead(PTXAS.format(arch="sm_120")) == ("TORCH_NO_BLACKWELL_ARCH", "error")


def test_triton_ptxas_without_sm_100a_reads_the_same():
    assert lead(PTXAS.format(arch="sm_100a"))[0] == "TORCH_NO_BLACKWELL_ARCH"


def test_the_fatal_line_before_triton_s_repro_path_reads_the_same():
    log = (
        "ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'\n"
        "Repro command: /opt/venv/lib/python3.12/site-packages/triton/backends/nvidia/bin/ptxas"
        " --gpu-name=sm_120 /tmp/a.ptx\n"
    )
    assert lead(log)[0] == "TORCH_NO_BLACKWELL_ARCH"


def test_a_pre_blackwell_arch_is_not_read_as_blackwell():
    assert "TORCH_NO_BLACKWELL_ARCH" not in codes(PTXAS.format(arch="sm_90a"))


def test_the_fatal_line_before_triton_s_own_error_reads_the_same():
    # Inductor's report on a GB10 (sm_121a): ptxas' line first, Triton's error after it
    log = (
        "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n"
        "Internal Triton PTX codegen error\n\n"
        "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
    )
    assert codes(log)[:2] == ["TORCH_NO_BLACKWELL_ARCH", "NVCC_TOO_OLD_FOR_ARCH"]


def test_triton_s_ptxas_older_than_any_arch_is_a_ptxas_too_old_hint():
    # sm_90a under a CUDA 11 ptxas: no Blackwell reading, the ptxas one alone
    assert lead(PTXAS.format(arch="sm_90a")) == ("NVCC_TOO_OLD_FOR_ARCH", "warning")


def test_ptxas_without_triton_is_not_triton_s():
    # ptxas run by a build of the user's own (nvcc, a JIT): no Triton in the log
    log = "ptxas fatal   : Value 'sm_120' is not defined for option 'gpu-name'\n"
    assert not {"TORCH_NO_BLACKWELL_ARCH", "NVCC_TOO_OLD_FOR_ARCH"} & set(codes(log))


def test_nvcc_s_own_refusal_stays_nvcc_s():
    log = "nvcc fatal   : Value 'sm_120' is not defined for option 'gpu-architecture'\n"
    assert lead(log)[0] == "NVCC_TOO_OLD_FOR_ARCH"


# --- the raylet's plasma store and /dev/shm ---


def test_raylet_request_above_dev_shm_is_small_shm():
    log = (
        "[2026-03-25 05:44:29,435 W 39 39] (raylet) store_runner.cc:83: System memory request"
        " exceeds memory available in /dev/shm. The request is for 10200547328 bytes, and the"
        " amount available is 9663676416 bytes. You may be able to free up space by deleting"
        " files in /dev/shm. If you are inside a Docker container, you may need to pass an"
        " argument with the flag '--shm-size' to 'docker run'.\n"
    )
    assert lead(log) == ("RAY_OBJECT_STORE_SMALL_SHM", "warning")


def test_the_request_restated_over_two_lines_reads_the_same():
    log = (
        "System memory request exceeds memory available in /dev/shm.\n"
        "The request is for 10200547328 bytes, and the amount available is 9663676416 bytes.\n"
    )
    assert lead(log) == ("RAY_OBJECT_STORE_SMALL_SHM", "warning")


def test_a_plasma_directory_on_disk_is_not_dev_shm():
    log = (
        "(raylet) store_runner.cc:83: System memory request exceeds memory available in"
        " /mnt/plasma. The request is for 10200547328 bytes, and the amount available is"
        " 9663676416 bytes.\n"
    )
    assert "RAY_OBJECT_STORE_SMALL_SHM" not in codes(log)
