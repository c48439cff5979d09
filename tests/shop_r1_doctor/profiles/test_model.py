"""Profiles load into typed records; a malformed profile fails with file:line: field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.profiles.model import load_profile_file, load_profiles, profiles_dir

SHIPPED = ("ada", "ampere", "blackwell", "blackwell-dc", "blackwell-rtx", "cpu", "hopper", "turing")


def test_profiles_shipped_set_loads():
    profiles = load_profiles()
    assert tuple(sorted(profiles)) == SHIPPED
    hopper = profiles["hopper"]
    assert hopper.torch.local == "2.11.0+cu130"
    assert str(hopper.torch.cuda) == "13.0"
    assert hopper.match.compute_capabilities == ((9, 0),)
    assert profiles["turing"].dtype == "fp16" and profiles["cpu"].dtype == "fp32"
    assert profiles["blackwell-dc"].flash_attn.arch_ccs() == ((10, 0),)
    # the family builds for both classes: sm_100 (B200) and sm_120 (RTX PRO 6000, RTX 50xx)
    assert profiles["blackwell"].flash_attn.arch_ccs() == ((10, 0), (12, 0))
    assert profiles["blackwell"].members == ("blackwell-dc", "blackwell-rtx")
    assert profiles["blackwell-rtx"].flash_attn.arch_ccs() == ((12, 0),)
    assert profiles_dir().name == "profiles"


def test_profiles_every_profile_cites_sources_and_platform_notes():
    for profile in load_profiles().values():
        assert "torch" in profile.sources, profile.name
        assert profile.notes["wsl2"] and profile.notes["windows"]


def test_profiles_name_patterns_match_marketing_names():
    profiles = load_profiles()
    assert profiles["blackwell-rtx"].match.matches_name("NVIDIA GeForce RTX 5090")
    assert profiles["blackwell-dc"].match.matches_name("NVIDIA B200")
    assert not profiles["blackwell-rtx"].match.matches_name("NVIDIA RTX 5000 Ada Generation")
    assert profiles["ada"].match.matches_name("NVIDIA L40S")
    assert not profiles["ada"].match.matches_name("NVIDIA A100-SXM4-80GB")


def _write(tmp_path: Path, mutate) -> Path:
    data = yaml.safe_load((profiles_dir() / "hopper.yaml").read_text())
    mutate(data)
    path = tmp_path / "hopper.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["torch"].pop("index_url"), "torch.index_url: missing"),
        (lambda d: d["torch"].update(variant="cuda13"), "torch.variant: expected cpu or cuXYZ"),
        (lambda d: d["torch"].update(version="2.11.0+cu130"), "torch.version: write the public"),
        (lambda d: d["match"].update(bf16="yes"), "match.bf16: expected true/false"),
        (
            lambda d: d["match"].update(compute_capabilities=["sm90"]),
            "match.compute_capabilities[0]",
        ),
        (lambda d: d["flash_attn"].update(mode="maybe"), "flash_attn.mode: expected one of"),
        (lambda d: d["flash_attn"].update(max_jobs=0), "flash_attn.max_jobs: expected a positive"),
        (lambda d: d.update(colour="red"), "colour: unknown field"),
        (lambda d: d.update(name="hoper"), "name: is 'hoper' but the file is hopper.yaml"),
        (lambda d: d["packages"].update(trl="~~1"), "packages.trl: not a version range"),
        (
            lambda d: d["extras"].update(deepspeed={"packages": {}}),
            "extras.deepspeed: unknown extra",
        ),
        (lambda d: d["notes"].pop("windows"), "notes.windows: missing"),
        (lambda d: d.update(attention="flash"), "attention: expected one of"),
    ],
)
def test_profiles_malformed_field_names_file_line_and_field(tmp_path, mutate, expected):
    path = _write(tmp_path, mutate)
    with pytest.raises(ToolError) as err:
        load_profile_file(path)
    message = str(err.value)
    assert message.startswith(f"{path}:"), message
    assert expected in message
    assert "\n" not in message


def test_profiles_error_carries_the_yaml_line(tmp_path):
    path = _write(tmp_path, lambda d: d["torch"].update(variant="cuda13"))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "variant:" in t)
    with pytest.raises(ToolError, match=rf"^{path}:{line}: torch.variant"):
        load_profile_file(path)


def test_profiles_invalid_yaml_is_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nmatch: [unclosed\n")
    with pytest.raises(ToolError, match=r"bad.yaml:\d+: not valid YAML"):
        load_profile_file(path)
