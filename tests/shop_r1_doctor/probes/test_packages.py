"""Installed distributions read from dist-info directories, markers evaluated here."""

from __future__ import annotations

from doctor_fakes import make_deps

from shop_r1_doctor.probes.deps import DistRecord
from shop_r1_doctor.probes.packages import INTERESTING, probe_packages, scan_installed


def _dist(site, name, version, requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_scan_reads_wanted_dists_and_the_probe_applies_markers(tmp_path):
    site = tmp_path / "site"
    _dist(
        site,
        "torch",
        "2.11.0+cu130",
        [
            'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"',
            'nvidia-nccl-cu13==2.28.9; platform_system == "Plan9"',
            'opt-einsum>=3.3; extra == "opt-einsum"',
            "filelock",
        ],
    )
    _dist(site, "nvidia-nccl-cu12", "2.27.3")
    _dist(site, "nvidia-nccl-cu13", "2.28.9")
    _dist(site, "Flash_Attn", "2.8.3")
    _dist(site, "requests", "2.32.0")  # not of interest: never read
    found = scan_installed([str(site)])
    assert set(found) == {"torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "flash-attn"}
    torch = found["torch"]
    assert torch.version == "2.11.0+cu130"
    assert torch.mtime is not None and torch.path.endswith(".dist-info")
    packages = probe_packages(make_deps(tmp_path, dists=lambda: found))["packages"]
    assert packages["torch"]["requires"] == ["nvidia-nccl-cu13==2.28.9", "filelock"]


def test_first_dist_on_the_path_wins(tmp_path):
    _dist(tmp_path / "a", "numpy", "2.2.6")
    _dist(tmp_path / "b", "numpy", "1.26.4")
    assert scan_installed([str(tmp_path / "a"), str(tmp_path / "b")])["numpy"].version == "2.2.6"


def test_probe_lists_every_dist_of_interest_and_all_nccl_wheels(tmp_path):
    records = {
        "torch": DistRecord("torch", "2.11.0+cu130", ("nvidia-nccl-cu13==2.28.9",)),
        "nvidia-nccl-cu12": DistRecord("nvidia-nccl-cu12", "2.27.3"),
        "nvidia-nccl-cu13": DistRecord("nvidia-nccl-cu13", "2.28.9"),
    }
    packages = probe_packages(make_deps(tmp_path, dists=lambda: records))["packages"]
    assert packages["torch"] == {
        "version": "2.11.0+cu130",
        "requires": ["nvidia-nccl-cu13==2.28.9"],
    }
    assert packages["nvidia-nccl-cu12"] == {"version": "2.27.3", "requires": []}
    assert packages["nvidia-nccl-cu13"]["version"] == "2.28.9"
    assert packages["vllm"] is None  # looked, not installed
    assert set(INTERESTING) <= set(packages)
