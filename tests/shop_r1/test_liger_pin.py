"""The trainer keeps Liger on Triton by reading the installed liger-kernel's metadata, as
`shop-r1 train` does, and never overrides an implementation the user chose."""

from __future__ import annotations

from shop_r1._compat import pin_liger_triton


def _install(tmp_path, monkeypatch, version):
    info = tmp_path / f"liger_kernel-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: liger-kernel\nVersion: {version}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def test_an_installed_dispatcher_version_is_pinned_to_triton(tmp_path, monkeypatch, capsys):
    _install(tmp_path, monkeypatch, "0.8.5")
    env: dict[str, str] = {"PATH": "/usr/bin"}
    pins = pin_liger_triton(env)
    assert env["LIGER_KERNEL_IMPL_ROPE"] == "nvidia-triton" and pins and env["PATH"] == "/usr/bin"
    assert "LIGER_KERNEL_IMPL_ROPE=nvidia-triton" in capsys.readouterr().err


def test_a_user_choice_is_kept(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "0.8.5")
    env = {"LIGER_KERNEL_IMPL_ROPE": "nvidia-cutedsl"}
    assert pin_liger_triton(env) == {} and env == {"LIGER_KERNEL_IMPL_ROPE": "nvidia-cutedsl"}


def test_an_older_liger_is_left_alone(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, "0.6.1")
    env: dict[str, str] = {}
    assert pin_liger_triton(env) == {} and env == {}
