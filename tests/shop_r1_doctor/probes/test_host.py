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


# /proc/1/mountinfo root lines: a Firecracker VM booted from a Docker-built image (ext4 on a
# block device), and a Docker container (overlay).
VM_ROOT = "20 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
DOCKER_ROOT = (
    "512 480 0:52 / / rw,relatime master:214 - overlay overlay rw,lowerdir=/var/lib/docker/"
    "overlay2/l/ABC:/var/lib/docker/overlay2/l/DEF,upperdir=/var/lib/docker/overlay2/x/diff\n"
)
HYPERVISOR_FLAGS = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm\n"
BARE_FLAGS = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae lahf_lm\n"


@pytest.mark.parametrize(
    ("files", "kernel", "container", "virt", "image"),
    [
        # the lent H100: a Firecracker VM whose root file system was built by Docker
        (
            {".dockerenv": "", "proc/1/mountinfo": VM_ROOT, "proc/cpuinfo": HYPERVISOR_FLAGS},
            "6.18.44-fc-v657-gpu",
            None,
            "firecracker",
            "docker",
        ),
        # a Docker container on a cloud VM: both
        (
            {".dockerenv": "", "proc/1/mountinfo": DOCKER_ROOT, "proc/cpuinfo": HYPERVISOR_FLAGS},
            "6.8.0-1017-aws",
            "docker",
            "vm",
            None,
        ),
        # a Docker container on bare metal
        (
            {".dockerenv": "", "proc/1/mountinfo": DOCKER_ROOT, "proc/cpuinfo": BARE_FLAGS},
            "6.8.0-45-generic",
            "docker",
            None,
            None,
        ),
        # a KVM guest named by its DMI table, no Docker anywhere
        (
            {
                "proc/1/mountinfo": VM_ROOT,
                "proc/cpuinfo": HYPERVISOR_FLAGS,
                "sys/class/dmi/id/sys_vendor": "QEMU\n",
            },
            "6.8.0-45-generic",
            None,
            "kvm",
            None,
        ),
        # bare metal
        (
            {"proc/1/mountinfo": VM_ROOT, "proc/cpuinfo": BARE_FLAGS},
            "6.8.0-45-generic",
            None,
            None,
            None,
        ),
    ],
)
def test_vm_container_and_docker_image_told_apart(tmp_path, files, kernel, container, virt, image):
    import dataclasses

    deps = _root(tmp_path, files)
    deps.environ = {}
    deps.platform = dataclasses.replace(deps.platform, release=kernel)
    host = probe_host(deps)
    assert (host["container"], host["virtualization"], host["image_built_by"]) == (
        container,
        virt,
        image,
    )


def test_recorded_h100_vm_is_not_in_docker(tmp_path):
    """The lent H100 as recorded: /.dockerenv on an ext4 root from /dev/vda under a
    Firecracker kernel. The doctor said "in docker" there."""
    import dataclasses

    deps = _root(
        tmp_path,
        {
            ".dockerenv": "",
            "proc/1/cgroup": (GPU / "h100" / "proc1-cgroup.txt").read_text(),
            "proc/1/mountinfo": (GPU / "h100" / "proc1-mountinfo.txt").read_text(),
            "proc/cpuinfo": HYPERVISOR_FLAGS,
        },
    )
    deps.environ = {}
    kernel = (GPU / "h100" / "uname.txt").read_text().split()[2]
    deps.platform = dataclasses.replace(deps.platform, release=kernel)
    host = probe_host(deps)
    assert host["container"] is None
    assert host["virtualization"] == "firecracker" and host["image_built_by"] == "docker"
