"""The compat knowledge and the code list load, and malformed files give one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version
from repo_paths import ROOT

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.knowledge import (
    COMPAT_PATH,
    load_codes,
    load_compat,
    load_compat_file,
)


def test_compat_lookups() -> None:
    c = load_compat()
    assert load_compat() is c  # cached
    assert str(c.driver_min_for(Version("12.8")).linux) == "570.26"
    assert c.max_cuda_for_driver(Version("580.159.04")) == Version("13.0")
    assert c.vllm_torch_pin(Version("0.10.1.1")).value == "2.7.1"
    assert c.vllm_min_cc_for(Version("0.22.0")).value == "7.5"
    assert (12, 0) in c.archs_for(Version("2.11.0+cu130"), "cu130").archs
    assert c.archs_for(Version("2.6.0+cu124"), "cu124").archs[-1] == (9, 0)
    assert c.newest_fa_covering(Version("2.7.1+cu128"), 12).release == "2.8.3"
    assert c.feature("bf16").min_cc == (8, 0)
    assert c.nccl_for(Version("2.11.0"), 13).value == "2.28.9"


def test_every_entry_names_its_source() -> None:
    c = load_compat()
    rows = [
        *c.driver_min,
        *c.torch_archs,
        *c.vllm_torch,
        *c.flash_attn_wheels,
        *c.features.values(),
    ]
    assert all(r.source for r in rows)
    assert all(info.trigger and info.fix for info in load_codes().values())


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (('linux: "570.26"', 'linux: "five-seventy"'), "driver_min[19].linux: not a version"),
        (('vllm: ">=0.9.0,<0.10"', 'vllm: "~~0.9"'), "vllm_torch[3].vllm: not a version range"),
        (('archs: ["8.0", "9.0", "10.0", "12.0"]', 'archs: ["sm80"]'), "not a compute capability"),
        (("schema: shop-r1.compat/1", "schema: other/1"), "schema: expected 'shop-r1.compat/1'"),
        (("torch_releases:", "torch_releases: [oops"), "not valid YAML"),
    ],
)
def test_malformed_compat_is_one_line_tool_error(
    tmp_path: Path, edit: tuple, expected: str
) -> None:
    text = COMPAT_PATH.read_text(encoding="utf-8")
    assert edit[0] in text
    bad = tmp_path / "compat.yaml"
    bad.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    with pytest.raises(ToolError) as err:
        load_compat_file(bad)
    message = str(err.value)
    assert "\n" not in message and str(bad) in message and expected in message


def test_missing_source_is_named(tmp_path: Path) -> None:
    text = COMPAT_PATH.read_text(encoding="utf-8")
    bad = tmp_path / "compat.yaml"
    bad.write_text(
        text.replace(', source: "NVIDIA CUDA 13.1 release notes"', "", 1), encoding="utf-8"
    )
    with pytest.raises(ToolError, match=r"driver_min\[22\]\.source: missing"):
        load_compat_file(bad)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"nope\.yaml: no such file"):
        load_compat_file(tmp_path / "nope.yaml")


def test_docs_checks_md_is_in_sync() -> None:
    from shop_r1_doctor.checks.docs import render_markdown

    docs = ROOT / "docs" / "checks.md"
    assert docs.read_text(encoding="utf-8") == render_markdown(), (
        "regenerate: python -m shop_r1_doctor.checks.docs > docs/checks.md"
    )


def test_refreshed_vllm_rows_and_opencv_floor() -> None:
    c = load_compat()
    pins = {v: c.vllm_torch_pin(Version(v)) for v in ("0.16.0", "0.27.0", "0.32.0", "0.33.0")}
    assert {v: r.value for v, r in pins.items() if r} == {
        "0.16.0": "2.9.1",
        "0.27.0": "2.13.0",
        "0.32.0": "2.13.0",
        "0.33.0": "2.14.0",
    }
    assert all(r and r.extra for r in pins.values())  # CUDA kept on every row
    floor = {v: c._ranged(c.vllm_opencv, Version(v)) for v in ("0.8.0", "0.14.0", "0.26.0")}
    assert floor["0.8.0"] is None  # opencv only through mistral_common[opencv]
    assert floor["0.14.0"].value == "4.11.0"  # type: ignore[union-attr]
    assert floor["0.26.0"].value == "4.13.0"  # type: ignore[union-attr]


def test_profiles_check_reads_the_vllm_opencv_floor(tmp_path: Path) -> None:
    import yaml

    from shop_r1_doctor.profiles.check import check_profile
    from shop_r1_doctor.profiles.model import load_profile_file, profiles_dir

    data = yaml.safe_load((profiles_dir() / "hopper.yaml").read_text(encoding="utf-8"))
    meg = data["extras"]["megatron"]
    meg["packages"]["megatron-core"] = "0.15.3"
    meg["pins"] = {"numpy": "<2", "opencv-python-headless": "==4.11.0.86"}
    path = tmp_path / "hopper.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    messages = [p.message for p in check_profile(load_profile_file(path), load_compat())]
    assert any("opencv-python-headless>=4.13.0" in m for m in messages), messages


@pytest.mark.parametrize(
    ("torch", "python", "release"),
    [
        ("2.9.1+cu128", "3.12", "2.8.3"),  # 2.8.3 has a torch 2.9 wheel for cp312 only
        ("2.9.1+cu128", "3.11", None),
        ("2.8.0+cu128", "3.11", "2.8.3"),
        ("2.8.0+cu128", None, "2.8.3"),
    ],
)
def test_fa_wheel_rows_respect_python_for_torch(
    torch: str, python: str | None, release: str | None
) -> None:
    row = load_compat().newest_fa_covering(Version(torch), 12, Version(python) if python else None)
    assert (row.release if row else None) == release


@pytest.mark.parametrize(
    ("text", "shown"),
    [("580.65.06", "580.65.06"), ("576.02", "576.02"), ("575.51.03", "575.51.03"),
     ("580.159.04", "580.159.04"), ("410.48", "410.48"), ("570.26", "570.26"), ("470", "470")],
)  # fmt: skip
def test_driver_versions_print_as_nvidia_writes_them(text, shown):
    from packaging.version import Version

    from shop_r1_doctor.knowledge import driver_text

    assert driver_text(Version(text)) == shown
