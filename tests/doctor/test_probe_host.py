"""Host probe: WSL, containers, OS release, paths written with ~, interpreter facts."""

from __future__ import annotations

import pytest
from doctor_fakes import GPU, make_deps

from shop_r1_doctor.probes.host import container_kind, probe_host, wsl_version


@pytest.mark.parametrize(
    ("proc_version", "expected"),
    [
        ((GPU / "h100" / "proc-version.txt").read_text(), None),
        ("Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f) (gcc 11.2.0)", 2),
        ("Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc 5.4.0) #1237", 1),
        ("", None),
        (None, None),
    ],
)
def test_wsl_version(proc_version, expected):
    assert wsl_version(proc_version) == expected


def _root(tmp_path, files):
    deps = make_deps(tmp_path)
    for rel, text in files.items():
        path = deps.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return deps


@pytest.mark.parametrize(
    ("files", "environ", "expected"),
    [
        (
            {".dockerenv": "", "proc/1/cgroup": (GPU / "h100" / "proc1-cgroup.txt").read_text()},
            {},
            "docker",
        ),
        ({"run/.containerenv": ""}, {}, "podman"),
        ({"proc/1/cgroup": "12:pids:/kubepods/burstable/pod1/abc\n"}, {}, "kubernetes"),
        ({".dockerenv": ""}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes"),
        ({"proc/1/cgroup": "0::/system.slice/containerd.service\n"}, {}, "containerd"),
        ({"proc/1/cgroup": "0::/init.scope\n"}, {}, None),
        ({}, {"container": "lxc"}, "other"),
    ],
)
def test_container_kind(tmp_path, files, environ, expected):
    deps = _root(tmp_path, files)
    deps.environ = environ
    assert container_kind(deps) == expected


def test_probe_host_facts(tmp_path):
    deps = _root(
        tmp_path,
        {
            "etc/os-release": (GPU / "h100" / "os-release.txt").read_text(),
            "proc/version": "Linux version 5.15.167.4-microsoft-standard-WSL2",
            ".dockerenv": "",
        },
    )
    home = str(tmp_path / "home")
    deps.home = home
    deps.environ = {"HF_HOME": f"{home}/hf", "TMPDIR": str(tmp_path), "PATH": ""}
    deps.output_dir = "runs/grpo"
    host = probe_host(deps)
    assert host["os"] == "linux"
    assert host["os_release"] == "Ubuntu 24.04.3 LTS"
    assert host["wsl"] == 2
    assert host["container"] == "docker"
    assert host["shm_bytes"] is None  # the fake root has no /dev/shm
    assert host["paths"]["hf_cache"] == "~/hf/hub"
    assert host["paths"]["output"] == f"{tmp_path}/runs/grpo"
    # Paths that do not exist yet are measured on their nearest existing parent.
    assert set(host["disk_free_bytes"]) == {str(tmp_path), "~/hf/hub", f"{tmp_path}/runs/grpo"}
    assert all(isinstance(v, int) and v > 0 for v in host["disk_free_bytes"].values())
    assert host["ram_bytes"] > 0
    assert host["python"]["version"] == "3.12.3"
    assert host["python"]["which_python"] is None  # empty PATH
    assert host["windows_long_paths"] is None


def test_shm_size_read_from_dev_shm(tmp_path):
    deps = make_deps(tmp_path)
    (deps.root / "dev" / "shm").mkdir(parents=True)
    assert probe_host(deps)["shm_bytes"] > 0


def test_home_is_written_as_tilde(tmp_path):
    deps = make_deps(tmp_path)
    deps.home = str(tmp_path)
    host = probe_host(deps)
    assert host["paths"]["cwd"] == "~"
    assert str(tmp_path) not in str(host)
