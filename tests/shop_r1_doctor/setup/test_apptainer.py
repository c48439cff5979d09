"""`build-image --format apptainer`: the definition runs `shop-r1 setup`'s install.

apptainer is not installable here, so the definition is checked for what `apptainer
build` reads: the header, the sections, the files it copies in, and the install commands,
which must be `shop-r1 setup --dry-run`'s for the same profile, in the same order.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest
from cli_errors import error_line
from golden import GOLDEN
from machines import snapshot_path
from repo_paths import ROOT
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1_doctor.profiles import get_profile
from shop_r1_doctor.profiles.model import load_profiles
from shop_r1_doctor.setup.apptainer import FILES_DIR, SOURCE_DIR, VENV, render

SECTIONS = ("%help", "%labels", "%files", "%environment", "%post", "%runscript", "%test")
# one GPU profile of each flash-attn mode and vLLM presence, and the CPU one
FAMILIES = ("cpu", "hopper", "blackwell-rtx", "turing", "ampere")


def sections(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """(header lines, {"%post": its lines, ...}) as apptainer's parser splits them."""
    header: list[str] = []
    out: dict[str, list[str]] = {}
    current: list[str] = header
    for line in text.splitlines():
        if re.match(r"^%\w+", line):
            current = out.setdefault(line.split()[0], [])
        elif line.strip():
            current.append(line.strip())
    return header, out


def post_commands(post: list[str]) -> list[list[str]]:
    """The venv and pip commands of %post, as argv (leading VAR=value assignments dropped)."""
    out = []
    for line in post:
        if line.startswith("#"):
            continue
        words = shlex.split(line)
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            words.pop(0)
        if words[1:3] in (["-m", "pip"], ["-m", "venv"]):
            out.append(words)
    return out


def setup_commands(profile: str) -> list[list[str]]:
    """`shop-r1 setup --dry-run --json` for the profile, with the image's venv and source."""
    result = CliRunner().invoke(
        app,
        [
            *("setup", "--profile", profile, "--snapshot", str(snapshot_path("cpu"))),
            *("--venv", VENV, "--python", f"python{get_profile(profile).python}"),
            *("--installer", "pip", "--shop-r1", f"{SOURCE_DIR}[train]", "--dry-run", "--json"),
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    files_dir = doc["files"]["constraints.txt"]["path"].rsplit("/", 1)[0]
    return [
        [a.replace(files_dir, FILES_DIR) for a in s["argv"]]
        for s in doc["steps"]
        if s["name"] != "doctor"
    ]


@pytest.mark.parametrize("name", FAMILIES)
def test_the_definition_runs_setups_commands_in_setups_order(name):
    _, sec = sections(render(get_profile(name)).definition)
    assert post_commands(sec["%post"]) == setup_commands(name)


@pytest.mark.parametrize("name", sorted(load_profiles()))
def test_the_definition_has_what_apptainer_build_reads(name):
    profile = get_profile(name)
    rendered = render(profile)
    header, sec = sections(rendered.definition)
    assert header == ["Bootstrap: docker", f"From: {profile.base_image}"]
    assert tuple(sec) == SECTIONS
    # every file an install names is copied in, and its text is the one written next to it
    copied = dict(line.split()[::-1] for line in sec["%files"])
    assert copied == {
        f"{FILES_DIR}/constraints.txt": "constraints.txt",
        f"{FILES_DIR}/requirements.txt": "requirements.txt",
        SOURCE_DIR: "shop-r1",
    }
    named = {w for c in post_commands(sec["%post"]) for w in c if w.startswith(FILES_DIR)}
    assert named <= set(copied)
    assert f"torch=={rendered.plan.torch.local}" in rendered.files()["constraints.txt"]
    # the profile's env vars at run time (%environment) and for the builds (%post)
    for key, value in profile.env.items():
        line = f"export {key}={shlex.quote(value)}"
        assert line in sec["%environment"] and line in sec["%post"]
    assert f'export PATH="{VENV}/bin:$PATH"' in sec["%environment"]
    assert any("exec shop-r1 doctor" in line for line in sec["%runscript"])
    if profile.cuda is not None:  # the CUDA base image has no Python: apt brings the profile's
        assert any(
            f"install -y --no-install-recommends python{profile.python} " in line
            for line in sec["%post"]
        )


@pytest.mark.parametrize("name", sorted(load_profiles()))
def test_definition_golden(name, golden):
    golden(GOLDEN / "apptainer" / f"{name}.def", render(get_profile(name)).definition)


def test_build_image_writes_the_definition_and_its_files(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "img"
    result = CliRunner().invoke(
        app, ["build-image", "--profile", "hopper", "--format", "apptainer", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    _, sec = sections((out / "shop-r1.def").read_text())
    for line in sec["%files"]:  # relative to the build directory, and there
        assert (out / line.split()[0]).exists(), line
    assert (out / "shop-r1" / "pyproject.toml").is_file()
    assert "apptainer build shop-r1-hopper.sif shop-r1.def" in result.stdout


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--format", "sif"], "--format sif"),
        (["--format", "apptainer", "--build"], "--build"),
        (["--format", "apptainer", "--build-arg", "A=B"], "--build-arg"),
    ],
)
def test_bad_format_options_are_one_line(tmp_path, args, flag):
    result = CliRunner().invoke(
        app, ["build-image", "--profile", "cpu", "-o", str(tmp_path / "x"), *args]
    )
    assert error_line(result).split(": error: ")[1].startswith(flag)
    assert not (tmp_path / "x").exists()
