"""`profiles check`: the shipped profiles agree with the compat knowledge; each kind of
contradiction is caught, named by file:line and field."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1_doctor.knowledge import load_compat
from shop_r1_doctor.profiles.check import check_profile, check_profiles
from shop_r1_doctor.profiles.model import load_profile_file, load_profiles, profiles_dir


def test_profiles_shipped_profiles_have_no_contradictions():
    assert check_profiles(load_profiles(), load_compat()) == []


def _variant(tmp_path: Path, name: str, mutate) -> Path:
    data = yaml.safe_load((profiles_dir() / f"{name}.yaml").read_text())
    mutate(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _megatron_015(d):
    d["extras"]["megatron"]["packages"]["megatron-core"] = "0.15.3"


def _megatron_015_pinned(d):
    _megatron_015(d)
    d["extras"]["megatron"]["pins"] = {"numpy": "<2", "opencv-python-headless": "==4.11.0.86"}


CASES = [
    ("hopper", lambda d: d.update(vllm="0.19.1"), "vllm", "pins torch==2.10.0"),
    (
        "blackwell-dc",
        lambda d: d["torch"].update(variant="cu126", index_url="x"),
        "torch.variant",
        "no kernels for matched sm_100",
    ),
    (
        "hopper",
        lambda d: d.update(base_image="nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04"),
        "base_image",
        "has CUDA 12.8",
    ),
    (
        "hopper",
        lambda d: d["cuda"].update(min_driver="570.26"),
        "cuda.min_driver",
        "below the 580.65.06",
    ),
    (
        "hopper",
        lambda d: d["flash_attn"].update(mode="wheel"),
        "flash_attn.mode",
        "no prebuilt flash-attn 2.8.3.post2 wheel",
    ),
    ("hopper", lambda d: d["flash_attn"].pop("max_jobs"), "flash_attn.max_jobs", "missing"),
    (
        "blackwell-dc",
        lambda d: d["flash_attn"].update(cuda_archs="90"),
        "flash_attn.cuda_archs",
        "no kernels for sm_100",
    ),
    (
        "blackwell-rtx",
        lambda d: d["flash_attn"].update(version="2.8.3"),
        "flash_attn.version",
        "no native sm_120",
    ),
    ("turing", lambda d: d["match"].update(bf16=True), "match.bf16", "sm_75 has no bf16"),
    (
        "turing",
        lambda d: d.update(attention="flash_attention_2"),
        "attention",
        "flash_attn.mode is none",
    ),
    (
        "hopper",
        lambda d: d["env"].update(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"),
        "env.PYTORCH_CUDA_ALLOC_CONF",
        "unset it",
    ),
    (
        "blackwell-dc",
        lambda d: d["env"].update(TORCH_CUDA_ARCH_LIST="9.0"),
        "env.TORCH_CUDA_ARCH_LIST",
        "misses matched sm_100",
    ),
    (
        "hopper",
        lambda d: d["extras"]["megatron"].update(gradient_accumulation_fusion=True),
        "extras.megatron.gradient_accumulation_fusion",
        "Apex",
    ),
    ("hopper", _megatron_015, "extras.megatron.pins.numpy", "pin numpy: '<2'"),
    ("hopper", _megatron_015, "extras.megatron.pins.opencv-python-headless", "==4.11.0.86"),
    (
        "cpu",
        lambda d: d.update(base_image="nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04"),
        "cuda",
        "base image is a CUDA build",
    ),
]


@pytest.mark.parametrize(("name", "mutate", "field", "text"), CASES)
def test_profiles_check_catches_contradiction(tmp_path, name, mutate, field, text):
    profile = load_profile_file(_variant(tmp_path, name, mutate))
    problems = check_profile(profile, load_compat())
    hits = [p for p in problems if p.field == field and text in p.message]
    assert hits, [str(p) for p in problems]
    assert str(hits[0]).startswith(f"{profile.path}:")


def test_profiles_megatron_015_with_pins_passes_pin_rules(tmp_path):
    profile = load_profile_file(_variant(tmp_path, "hopper", _megatron_015_pinned))
    fields = {p.field for p in check_profile(profile, load_compat())}
    assert (
        not {"extras.megatron.pins.numpy", "extras.megatron.pins.opencv-python-headless"} & fields
    )


def test_profiles_cli_check_ok_and_failing(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["profiles", "check"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.strip().endswith(": ok")
    for f in profiles_dir().glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    _variant(tmp_path, "hopper", lambda d: d.update(vllm="0.19.1"))
    _variant(tmp_path, "turing", lambda d: d["match"].update(bf16=True))
    bad = runner.invoke(app, ["profiles", "check", "--dir", str(tmp_path)])
    assert bad.exit_code == 1
    lines = bad.output.strip().splitlines()
    assert any("hopper.yaml" in line and "vllm:" in line for line in lines)
    assert any("turing.yaml" in line and "match.bf16:" in line for line in lines)
    assert "in 2 profile(s)" in lines[-1]


def test_profiles_cli_list_show_json():
    runner = CliRunner()
    listed = runner.invoke(app, ["profiles", "list"])
    assert listed.exit_code == 0
    assert listed.output.splitlines()[0].split()[:3] == ["profile", "GPUs", "(sm)"]
    shown = runner.invoke(app, ["profiles", "show", "hopper", "--json"])
    assert shown.exit_code == 0
    import json

    data = json.loads(shown.output)
    assert data["torch"]["index_url"] == "https://download.pytorch.org/whl/cu130"
    assert data["cuda"]["min_driver"] == "580.65.06"


def test_profiles_cli_malformed_profile_exits_2_one_line(tmp_path):
    for f in profiles_dir().glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    _variant(tmp_path, "ada", lambda d: d["torch"].pop("version"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shop_r1.cli",
            "profiles",
            "check",
            "--dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "ada.yaml:" in proc.stderr and "torch.version: missing" in proc.stderr


def _as(profile, name, **match):
    import msgspec

    return msgspec.structs.replace(
        profile, name=name, match=msgspec.structs.replace(profile.match, **match)
    )


def test_profiles_that_match_the_same_gpu_need_a_priority():
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.profiles.check import overlaps
    from shop_r1_doctor.profiles.match import best_profile

    shipped = load_profiles()
    assert overlaps(shipped) == []
    hopper = shipped["hopper"]
    h100 = Facts({"gpus": [{"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}]})
    # a new profile for the same GPU: an error, not a silent alphabetical tie-break
    clash = {**shipped, "a-hopper-test": _as(hopper, "a-hopper-test")}
    (problem,) = overlaps(clash)
    assert "a-hopper-test, hopper all match" in problem.message
    assert problem in check_profiles(clash, load_compat())
    # distinct priorities: no problem, and the higher one wins
    ranked = {**shipped, "a-hopper-test": _as(hopper, "a-hopper-test", priority=1)}
    ranked["hopper"] = _as(hopper, "hopper", priority=2)
    assert overlaps(ranked) == []
    assert best_profile(h100, ranked)[0].name == "hopper"
    ranked["hopper"] = _as(hopper, "hopper", priority=0)
    assert best_profile(h100, ranked)[0].name == "a-hopper-test"


def test_a_name_pattern_overlap_is_found_without_a_compute_capability():
    """Old nvidia-smi reports names only: "RTX 50" also matched "RTX 5000 Ada"."""
    from shop_r1_doctor.profiles.check import overlaps

    shipped = load_profiles()
    wide = _as(shipped["blackwell-rtx"], "blackwell-rtx", name_patterns=("RTX 50",))
    problems = overlaps({**shipped, "blackwell-rtx": wide})
    assert any("ada, blackwell-rtx all match NVIDIA RTX 5000 Ada" in p.message for p in problems)


@pytest.mark.parametrize(
    ("gpu", "cc", "profile"),
    [
        ("NVIDIA B200", "10.0", "blackwell-dc"),
        ("NVIDIA GB200", "10.0", "blackwell-dc"),
        ("NVIDIA B300 SXM6 AC", "10.3", "blackwell-dc"),
        ("NVIDIA GeForce RTX 5090", "12.0", "blackwell-rtx"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "12.0", "blackwell-rtx"),
        ("NVIDIA GB10", "12.1", "blackwell-rtx"),  # DGX Spark
        ("NVIDIA RTX 5000 Ada Generation", None, "ada"),
    ],
)
def test_blackwell_is_split_by_class(gpu, cc, profile):
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.profiles.match import best_profile

    facts = Facts({"gpus": [{"name": gpu, "compute_capability": cc}]})
    assert best_profile(facts, load_profiles())[0].name == profile
    shipped = load_profiles()
    assert shipped["blackwell-dc"].env_consumer_multi_gpu == {}  # NVLink: P2P stays on
    assert shipped["blackwell-rtx"].env_consumer_multi_gpu["NCCL_P2P_DISABLE"] == "1"


def test_a_family_profile_covers_exactly_its_members():
    """`blackwell` builds one image for blackwell-dc and blackwell-rtx: the check fails on a
    family that drops a member's GPU, claims one no member has, or builds flash-attn for
    one class only (the image users were told to build missed sm_120)."""
    import msgspec

    from shop_r1_doctor.profiles.check import families

    shipped = load_profiles()
    assert families(shipped) == []
    fam = shipped["blackwell"]

    def with_(**kw):
        return {**shipped, "blackwell": msgspec.structs.replace(fam, **kw)}

    no_rtx = msgspec.structs.replace(fam.match, compute_capabilities=((10, 0), (10, 3)))
    (p,) = families(with_(match=no_rtx))
    assert p.field == "match.compute_capabilities" and "missing here: 12.0, 12.1" in p.message
    dc_only = msgspec.structs.replace(fam.flash_attn, cuda_archs="100")
    problems = families(with_(flash_attn=dc_only))
    assert {p.field for p in problems} == {"flash_attn.cuda_archs"}
    assert [m for p in problems for m in ("sm_120", "sm_121") if m in p.message] == [
        "sm_120",
        "sm_121",
    ]
    (p,) = families(with_(members=("blackwell-dc", "blackwell-gb")))
    assert p.field == "members" and "no such profile blackwell-gb" in p.message
    # a family overlaps its members by design, not a priority clash; two members do not
    from shop_r1_doctor.profiles.check import overlaps

    assert overlaps(shipped) == []
    assert overlaps({**shipped, "blackwell": msgspec.structs.replace(fam, members=())})


def test_a_machine_mixing_the_family_gets_the_family():
    from shop_r1_doctor.facts import Facts
    from shop_r1_doctor.profiles.match import best_profile

    mixed = Facts(
        {
            "gpus": [
                {"name": "NVIDIA B200", "compute_capability": "10.0"},
                {"name": "NVIDIA RTX PRO 6000 Blackwell", "compute_capability": "12.0"},
            ]
        }
    )
    assert best_profile(mixed, load_profiles())[0].name == "blackwell"
