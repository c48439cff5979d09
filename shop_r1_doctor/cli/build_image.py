"""`shop-r1 build-image --profile NAME -o DIR [--with verl] [--base-image IMG] [--build] ...`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import typer

from shop_r1_doctor.errors import ToolError


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("build-image")(build_image)


def build_image(
    profile: str = typer.Option(..., "--profile", help="Profile name (shop-r1 profiles list)."),
    output: Path = typer.Option(
        ..., "--output", "-o", help="Directory for the files and the build context."
    ),
    with_: list[str] = typer.Option([], "--with", help="Add a stack: verl, megatron (repeatable)."),
    build: bool = typer.Option(False, "--build", help="Build it with the local Docker engine."),
    tag: str | None = typer.Option(None, "--tag", help="Image tag (default shop-r1:PROFILE)."),
    base_image: str | None = typer.Option(
        None, "--base-image", help="Replace the profile's base image (a local mirror or copy)."
    ),
    network: str | None = typer.Option(
        None, "--network", help="Network of the build's RUN steps (docker build --network)."
    ),
    build_arg: list[str] = typer.Option(
        [], "--build-arg", help="KEY=VALUE for the build, e.g. TORCH_INDEX_URL=<mirror>."
    ),
    push: bool = typer.Option(False, "--push", help="Push the tag after building."),
) -> None:
    """Render a Dockerfile, its build context and docker-run.sh for a profile (and build it)."""
    from shop_r1_doctor import dockerfile
    from shop_r1_doctor.profiles.model import get_profile

    prof = get_profile(profile)
    rendered = dockerfile.render(prof, with_, tag, base_image)
    target = output.resolve()
    for path in dockerfile.write(rendered, target):
        typer.echo(f"wrote {path}")
    typer.echo(f"wrote {dockerfile.write_context(target)}/ (the build context)")
    args = _build_args(build_arg)
    flags = "".join(f" --build-arg {shlex.quote(k + '=' + v)}" for k, v in args.items())
    flags += f" --network {shlex.quote(network)}" if network else ""
    command = dockerfile.build_command(target, rendered.tag).replace(
        "docker build", "docker build" + flags, 1
    )
    typer.echo(f"build: {command}")
    typer.echo(f"run:   {target / 'docker-run.sh'} shop-r1 doctor")
    if build or push:
        base = base_image or prof.base_image
        _build(target, rendered.tag, base, command, push, network, args)


def _build_args(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ToolError(f"--build-arg {pair}: expected KEY=VALUE")
        out[key] = value
    return out


def _build(
    context: Path,
    tag: str,
    base: str,
    command: str,
    push: bool,
    network: str | None,
    build_args: dict[str, str],
) -> None:
    """Build through the Docker SDK, streaming the engine's progress lines."""
    try:
        import docker
        from docker.errors import APIError, DockerException
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
    progress = _Progress(base)
    try:
        # docker-py reads .dockerignore from the context directory itself.
        for chunk in client.api.build(
            path=str(context),
            tag=tag,
            rm=True,
            forcerm=True,
            decode=True,
            network_mode=network,
            buildargs=build_args,
        ):
            progress.show(chunk)
        if push:
            for chunk in client.api.push(tag, stream=True, decode=True):
                progress.show(chunk)
    except APIError as exc:
        raise ToolError(progress.failure(exc.explanation or str(exc))) from None
    typer.echo(f"built {tag}" + (" and pushed it" if push else ""))


_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")


class _Progress:
    """Echo the engine's lines; turn an error into one line naming the step or base image."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.step = ""

    def show(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            raise ToolError(self.failure(str(chunk["error"])))
        text = str(chunk.get("stream") or chunk.get("status") or "").rstrip()
        for line in text.splitlines():
            m = _STEP.match(line.strip())
            if m:
                self.step = f"step {m.group(1)} ({_short(m.group(2))})"
        if text.strip():
            typer.echo(text)

    def failure(self, error: str) -> str:
        error = " ".join(error.split())
        # Step 1 is the FROM: whatever fails there (no such image, no registry, no
        # network, auth) is about getting the base image.
        if not self.step or self.step.startswith("step 1/"):
            return (
                f"docker build: cannot get base image {self.base}: {error} "
                "(pass --base-image with one the engine has: docker images)"
            )
        return f"docker build failed at {self.step}: {error}"


def _short(instruction: str, limit: int = 80) -> str:
    instruction = " ".join(instruction.split())
    return instruction if len(instruction) <= limit else instruction[: limit - 3] + "..."
