"""InfiniBand and WSL libcuda facts, probed from a fake root and recorded `ldconfig -p`,
then fed to the checks that read them (NCCL_IB_UNUSABLE, WSL_LIBCUDA_NOT_LINKABLE)."""

from __future__ import annotations

import pytest
from doctor_fakes import make_deps

from shop_r1_doctor.checks import run_checks
from shop_r1_doctor.isolate import CommandResult
from shop_r1_doctor.probes.fabric import memlock_limit, probe_fabric
from shop_r1_doctor.probes.host import probe_host

LIMITS = (
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max open files            20000                20000                files     \n"
    "Max locked memory         {soft:<20} {soft:<20} bytes     \n"
)
# `ldconfig -p` lines as glibc prints them (the WSL driver's libraries in /usr/lib/wsl/lib).
LDCONFIG_WSL_OK = (
    "512 libs found in cache `/etc/ld.so.cache'\n"
    "\tlibcudadebugger.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcudadebugger.so.1\n"
    "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so.1\n"
    "\tlibcuda.so (libc6,x86-64) => /usr/lib/wsl/lib/libcuda.so\n"
)
LDCONFIG_WSL_MISSING = (
    "498 libs found in cache `/etc/ld.so.cache'\n"
    "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
)
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (LIMITS.format(soft="65536"), 65536),  # docker's default memlock
        (LIMITS.format(soft="unlimited"), -1),
        ("", None),
        (None, None),
    ],
)
def test_memlock_limit(text, expected):
    assert memlock_limit(text) == expected


def _deps(tmp_path, files, runner=None):
    deps = make_deps(tmp_path, **({"runner": runner} if runner else {}))
    for rel, text in files.items():
        path = deps.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return deps


def _ib(tmp_path, with_dev, soft):
    files = {
        "sys/class/infiniband/mlx5_0/ports/1/state": "4: ACTIVE\n",
        "sys/class/infiniband/mlx5_1/ports/1/state": "4: ACTIVE\n",
        "proc/self/limits": LIMITS.format(soft=soft),
    }
    if with_dev:
        files["dev/infiniband/uverbs0"] = ""
    return _deps(tmp_path, files)


@pytest.mark.parametrize(
    ("with_dev", "soft", "expected", "fires"),
    [
        # container started without --device /dev/infiniband
        (False, "unlimited", {"sys_devices": ["mlx5_0", "mlx5_1"], "dev_present": False}, True),
        # devices passed through but docker's 64 KiB memlock
        (True, "65536", {"dev_present": True, "memlock_bytes": 65536}, True),
        # --device /dev/infiniband --ulimit memlock=-1: usable, nothing to say
        (True, "unlimited", {"dev_present": True, "memlock_bytes": -1}, False),
    ],
)
def test_infiniband_probe_feeds_the_check(tmp_path, with_dev, soft, expected, fires):
    deps = _ib(tmp_path, with_dev, soft)
    ib = probe_fabric(deps, wsl=None)["infiniband"]
    assert expected.items() <= ib.items()
    snapshot = {"host": {"infiniband": ib}, "gpus": [H100, {**H100, "index": 1}], "env": {}}
    codes = [f.code for f in run_checks(snapshot)]
    assert ("NCCL_IB_UNUSABLE" in codes) is fires


def test_no_infiniband_class_is_none_not_unknown(tmp_path):
    assert probe_fabric(_deps(tmp_path, {}), wsl=None)["infiniband"] is None


def _runner(stdout, returncode=0):
    def run(argv, timeout, env=None):
        assert argv[-1] == "-p"
        return CommandResult(returncode, stdout, "")

    return run


@pytest.mark.parametrize(
    ("wsl", "stdout", "expected", "fires"),
    [
        (2, LDCONFIG_WSL_OK, True, False),
        (2, LDCONFIG_WSL_MISSING, False, True),
        (None, LDCONFIG_WSL_MISSING, None, False),  # not WSL: ldconfig is not asked
    ],
)
def test_wsl_libcuda_probe_feeds_the_check(tmp_path, wsl, stdout, expected, fires):
    deps = _deps(tmp_path, {}, runner=_runner(stdout))
    value = probe_fabric(deps, wsl=wsl)["libcuda_in_ldconfig"]
    assert value is expected
    snapshot = {"host": {"wsl": wsl, "libcuda_in_ldconfig": value}, "env": {}}
    codes = [f.code for f in run_checks(snapshot)]
    assert ("WSL_LIBCUDA_NOT_LINKABLE" in codes) is fires


def test_ldconfig_that_fails_is_unknown(tmp_path):
    deps = _deps(tmp_path, {}, runner=_runner("", returncode=1))
    assert probe_fabric(deps, wsl=2)["libcuda_in_ldconfig"] is None


def test_probe_host_carries_the_fabric_facts(tmp_path):
    deps = _ib(tmp_path, with_dev=False, soft="unlimited")
    (deps.root / "proc/version").write_text(
        "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc 11.2.0)"
    )
    deps.runner = _runner(LDCONFIG_WSL_MISSING)
    host = probe_host(deps)
    assert host["wsl"] == 2
    assert host["infiniband"]["sys_devices"] == ["mlx5_0", "mlx5_1"]
    assert host["libcuda_in_ldconfig"] is False
