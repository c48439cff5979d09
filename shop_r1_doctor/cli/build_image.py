"""`shop-r1 build-image --profile NAME -o DIR [--with verl] [--base-image IMG] [--build] ...`
(`--format apptainer`: an Apptainer definition of the same install as `shop-r1 setup`)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from shop_r1_doctor.errors import ToolError

if TYPE_CHECKING:
    from shop_r1_doctor.facts import GpuFacts

FORMATS = ("docker", "apptainer")


def register(app: typer.Typer) -> None:
    """Add this group's command(s) to the root app."""
    app.command("build-image")(build_image)


def build_image(
    profile: str = typer.Option(
        ...,
        "--profile",
        help="Profile name (shop-r1 profiles list), GPU name or compute capability "
        "('RTX PRO 6000', sm_120).",
    ),
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
    snapshot: Path | None = typer.Option(
        None,
        "--snapshot",
        help="The GPU machine the image is for (a `shop-r1 doctor --save` snapshot); "
        "default: this machine's GPUs, if it has any.",
    ),
    format_: str = typer.Option(
        "docker",
        "--format",
        help="docker (Dockerfile, docker-run.sh) or apptainer (shop-r1.def: the install "
        "of `shop-r1 setup` in an Apptainer/Singularity image, for clusters).",
    ),
) -> None:
    """Render a Dockerfile, its build context and docker-run.sh for a profile (and build it)."""
    from shop_r1_doctor import dockerfile
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.profiles.lookup import resolve_profile

    out = Output()
    if format_ not in FORMATS:
        raise ToolError(f"--format {format_}: choose {' or '.join(FORMATS)}")
    if format_ == "apptainer":
        docker_only = {
            "--build": build, "--push": push, "--tag": tag, "--network": network,
            "--build-arg": build_arg,
        }  # fmt: skip
        given = [flag for flag, value in docker_only.items() if value]
        if given:
            raise ToolError(
                f"{given[0]}: a Docker option; with --format apptainer run the printed "
                "`apptainer build` command"
            )
    found = resolve_profile(profile)
    prof = found.profile
    if found.how:
        out.line(f"profile {prof.name} ({found.how})")
    for line in uncovered_gpus(prof, _machine_gpus(snapshot)):
        out.line(f"warning: {line}", err=True)
    if format_ == "apptainer":
        _apptainer(prof, with_, base_image, output)
        return
    rendered = dockerfile.render(prof, with_, tag, base_image)
    target = output.resolve()
    for path in dockerfile.write(rendered, target):
        out.line(f"wrote {path}")
    out.line(f"wrote {dockerfile.write_context(target)}/ (the build context)")
    args = _build_args(build_arg)
    flags = "".join(f" --build-arg {shlex.quote(k + '=' + v)}" for k, v in args.items())
    flags += f" --network {shlex.quote(network)}" if network else ""
    command = dockerfile.build_command(target, rendered.tag).replace(
        "docker build", "docker build" + flags, 1
    )
    out.line(f"build: {command}")
    out.line(f"run:   {target / 'docker-run.sh'} shop-r1 doctor")
    if build or push:
        base = base_image or prof.base_image
        _build(target, rendered.tag, base, command, push, network, args)


def _apptainer(prof: Any, with_: list[str], base_image: str | None, output: Path) -> None:
    import msgspec

    from shop_r1_doctor import dockerfile
    from shop_r1_doctor.cli.output import Output
    from shop_r1_doctor.setup import apptainer

    out = Output()
    extras = dockerfile.validate_extras(prof, with_)
    if base_image:
        prof = msgspec.structs.replace(prof, base_image=base_image)
    rendered = apptainer.render(prof, extras, context_dir=dockerfile.CONTEXT_DIR)
    target = output.resolve()
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in rendered.files().items():
            (target / name).write_text(text, encoding="utf-8")
            out.line(f"wrote {target / name}")
    except OSError as exc:
        raise ToolError(f"{target}: cannot write: {exc.strerror}") from None
    out.line(f"wrote {dockerfile.write_context(target)}/ (copied in by %files)")
    out.line(
        f"build: cd {shlex.quote(str(target))} && apptainer build {rendered.sif} {apptainer.DEF_NAME}"
    )
    nv = " --nv" if prof.cuda is not None else ""
    out.line(f"run:   apptainer run{nv} {rendered.sif}   (the doctor in the image)")


def _machine_gpus(snapshot: Path | None) -> tuple[list[GpuFacts], str]:
    """(GPUs, whose) of the snapshot, else of this machine (a fast probe: nvidia-smi)."""
    from shop_r1_doctor.facts import Facts

    if snapshot is not None:
        from shop_r1_doctor.snapshot import load_snapshot

        return Facts(load_snapshot(snapshot)).gpus, f"snapshot {snapshot}"
    from shop_r1_doctor.probes.collect import collect_snapshot

    return Facts(collect_snapshot(fast=True)).gpus, "this machine"


def uncovered_gpus(prof: Any, machine: tuple[list[GpuFacts], str]) -> list[str]:
    """One line per GPU model of the machine that the profile's image has no kernels for,
    naming the profile that has them. A machine without GPUs (a build host) is no case."""
    from shop_r1_doctor.profiles.match import gpu_matches
    from shop_r1_doctor.profiles.model import load_profiles

    gpus, whose = machine
    profiles = load_profiles()
    out = []
    from shop_r1_doctor.facts import GpuFacts, shown

    known = {(shown(g.name), g.compute_capability or None) for g in gpus}
    for name, cc in sorted(known, key=lambda k: (k[0], str(k[1]))):
        gpu = GpuFacts(name=name, compute_capability=cc)
        if gpu_matches(prof, gpu):
            continue
        fits = sorted(p.name for p in profiles.values() if gpu_matches(p, gpu))
        arch = f"sm_{str(cc).replace('.', '')}" if cc else "unknown capability"
        covers = ", ".join(f"sm_{a}{b}" for a, b in prof.match.compute_capabilities) or "no GPU"
        instead = f"use --profile {' or '.join(fits)}" if fits else "no profile covers it"
        out.append(
            f"{whose} has {name} ({arch}), which profile {prof.name} ({covers}) builds no "
            f"kernels for: {instead}"
        )
    return out


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
    progress.out.line(f"built {tag}" + (" and pushed it" if push else ""))


_STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")


class _Progress:
    """Echo the engine's lines; turn an error into one line naming the step or base image."""

    def __init__(self, base: str) -> None:
        from shop_r1_doctor.cli.output import Output

        self.base = base
        self.step = ""
        self.out = Output()

    def show(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            raise ToolError(self.failure(str(chunk["error"])))
        text = str(chunk.get("stream") or chunk.get("status") or "").rstrip()
        for line in text.splitlines():
            m = _STEP.match(line.strip())
            if m:
                self.step = f"step {m.group(1)} ({_short(m.group(2))})"
        if text.strip():
            self.out.line(text)

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
