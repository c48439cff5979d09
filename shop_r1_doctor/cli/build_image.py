"""`shop-r1 build-image --profile NAME --output DIR [--with verl] [--build] [--tag T] [--push]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("build-image")(build_image)


def build_image(
    profile: str = typer.Option(..., "--profile", help="Profile name (shop-r1 profiles list)."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory to write the files to."),
    with_: list[str] = typer.Option([], "--with", help="Add a stack: verl, megatron (repeatable)."),
    build: bool = typer.Option(False, "--build", help="Build it with the local Docker engine."),
    tag: str | None = typer.Option(None, "--tag", help="Image tag (default shop-r1:PROFILE)."),
    push: bool = typer.Option(False, "--push", help="Push the tag after building."),
) -> None:
    """Render a Dockerfile, .dockerignore and docker-run.sh for a profile (and build it)."""
    from shop_r1_doctor import dockerfile
    from shop_r1_doctor.profiles.model import get_profile

    prof = get_profile(profile)
    root = dockerfile.source_root()
    target = output.resolve()
    rel = target / "Dockerfile"
    rel = rel.relative_to(root) if rel.is_relative_to(root) else rel
    rendered = dockerfile.render(prof, with_, tag, rel)
    for path in dockerfile.write(rendered, output):
        typer.echo(f"wrote {path}")
    command = dockerfile.build_command(target / "Dockerfile", rendered.tag, root)
    typer.echo(f"build: {command}")
    typer.echo(f"run:   {output / 'docker-run.sh'} shop-r1 doctor")
    if build or push:
        _build(target / "Dockerfile", rendered.tag, root, command, push)


def _build(dockerfile_path: Path, tag: str, root: Path, command: str, push: bool) -> None:
    """Build through the Docker SDK, streaming the engine's progress lines."""
    try:
        import docker
        from docker.errors import APIError, BuildError, DockerException
        from docker.utils.build import tar
    except ImportError:
        raise ToolError(
            f"the `docker` Python package is missing; build by hand: {command}"
        ) from None
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ToolError(
            f"no Docker engine reachable ({reason}); build by hand: {command}"
        ) from None
    patterns = _ignore_patterns(dockerfile_path.with_name(".dockerignore"))
    rel = (
        str(dockerfile_path.relative_to(root))
        if dockerfile_path.is_relative_to(root)
        else str(dockerfile_path)
    )
    context = tar(str(root), exclude=patterns, dockerfile=(rel, None), gzip=False)
    try:
        for chunk in client.api.build(
            fileobj=context, custom_context=True, dockerfile=rel, tag=tag, rm=True, decode=True
        ):
            _show(chunk)
        if push:
            for chunk in client.images.push(tag, stream=True, decode=True):
                _show(chunk)
    except (APIError, BuildError) as exc:
        raise ToolError(f"docker build of {tag} failed: {exc}") from None
    typer.echo(f"built {tag}" + (" and pushed it" if push else ""))


def _show(chunk: dict[str, Any]) -> None:
    if "error" in chunk:
        raise ToolError(f"docker: {chunk['error'].strip()}")
    text = chunk.get("stream") or chunk.get("status") or ""
    if text.strip():
        typer.echo(text.rstrip())


def _ignore_patterns(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
