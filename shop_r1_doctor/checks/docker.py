"""Docker: an engine that does not answer, or one that cannot give containers the GPUs.

Quiet where Docker does not matter: no engine (no socket, no DOCKER_HOST) says nothing;
an engine on a machine without NVIDIA GPUs says nothing about GPU support.
"""

from __future__ import annotations

from collections.abc import Iterator

from shop_r1_doctor.checks._base import finding
from shop_r1_doctor.facts import Facts, shown
from shop_r1_doctor.findings import Finding


def docker_unreachable(facts: Facts) -> Iterator[Finding]:
    docker = facts.docker
    if not docker or docker.reachable:
        return
    explicit = docker.host_from == "DOCKER_HOST"
    yield finding(
        "DOCKER_ENGINE_UNREACHABLE",
        f"the Docker engine at {shown(docker.host, 'None')} does not answer",
        detail=str(docker.error or ""),
        # Asked for by DOCKER_HOST: a warning; a socket file alone: only a note.
        severity="warning" if explicit else "info",
    )


def docker_gpus(facts: Facts) -> Iterator[Finding]:
    docker = facts.docker
    if not docker or not docker.reachable or docker.gpus_usable:
        return
    if not facts.gpus or facts.container is not None:
        return  # no GPUs to give (or we are inside a container: the host's engine is elsewhere)
    yield finding(
        "DOCKER_NO_GPU_SUPPORT",
        f"Docker {shown(docker.server_version, 'None')} here has no NVIDIA runtime, hook or CDI "
        "devices: `docker run --gpus all` fails",
        detail="'could not select device driver \"\" with capabilities: [[gpu]]'",
    )


CHECKS = (docker_unreachable, docker_gpus)
