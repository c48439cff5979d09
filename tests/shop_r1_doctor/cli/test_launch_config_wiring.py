"""`launch --config` is checked by the trainer's config check, passed in by the entry point
(no registry filled at import time); without it the doctor alone refuses, never writes."""

from typer.testing import CliRunner

from shop_r1.cli import app as full_app
from shop_r1_doctor.cli.main import app as doctor_app
from shop_r1_doctor.cli.main import make_app


def _launch(app, tmp_path, config_text):
    config = tmp_path / "run.yaml"
    config.write_text(config_text)
    script = tmp_path / "run.sh"
    args = ["launch", "grpo", "--profile", "hopper", "-o", str(script), "--config", str(config)]
    return CliRunner().invoke(app, args), script


def test_full_entry_checks_the_config_like_train(tmp_path):
    result, script = _launch(full_app, tmp_path, "learning_rate: fast\n")
    assert result.exit_code == 2
    assert f"{tmp_path / 'run.yaml'}:1: learning_rate: expected" in result.output
    assert not script.exists()


def test_full_entry_accepts_a_good_config(tmp_path):
    result, script = _launch(full_app, tmp_path, "learning_rate: 1e-6\n")
    assert result.exit_code == 0, result.output
    assert script.is_file()


def test_doctor_alone_refuses_an_unchecked_config(tmp_path):
    result, script = _launch(doctor_app, tmp_path, "learning_rate: 1e-6\n")
    assert result.exit_code == 2
    assert "run `shop-r1 launch`" in result.output
    assert not script.exists()


def test_importing_the_entry_point_changes_no_doctor_app():
    # the checks reach the one app built with them; a fresh doctor app has none
    (cmd,) = [c for c in make_app("x").registered_commands if c.name == "launch"]
    assert cmd.context_settings["obj"] == {}
