"""Ray: Windows, the object store's /dev/shm, its temp dir, the cluster address."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from shop_r1_doctor.checks._base import GIB, bytes_gib, finding
from shop_r1_doctor.facts import NOT_PROBED, Facts, shown
from shop_r1_doctor.findings import Finding
from shop_r1_doctor.sections import RayFacts
from shop_r1_doctor.target_python import pip_command

AF_UNIX_MAX = 107
RAY_SOCKET_SUFFIX = 60  # /ray/session_<date>_<pid>/sockets/plasma_store and friends
TMP_LOW = 10 * GIB


def _ray(facts: Facts) -> RayFacts | None:
    """The Ray probe's section; else what the package list knows (a pasted `pip list`, a
    probe that timed out): Ray is installed, its cluster state unknown (NOT_PROBED)."""
    if facts.ray:
        return facts.ray
    version = facts.version("ray")
    return RayFacts(version=str(version)) if version else None


def ray_windows(facts: Facts) -> Iterator[Finding]:
    ray = _ray(facts)
    if ray is None or facts.os != "windows":
        return
    yield finding(
        "RAY_WINDOWS_AGENT_CRASH",
        f"Ray {shown(ray.version, '')} on native Windows: the raylet can exit at start (SIGSEGV)",
        severity="error" if facts.plan.use_ray else "warning",
        detail="'The raylet exited immediately because one Ray agent failed, agent_name = dashboard_agent'.",
    )


def ray_shm(facts: Facts) -> Iterator[Finding]:
    shm, ram = facts.host.shm_bytes, facts.host.ram_bytes
    if _ray(facts) is None or facts.container is None:
        return
    if not isinstance(shm, int) or not isinstance(ram, int) or shm >= 0.3 * ram:
        return
    yield finding(
        "RAY_OBJECT_STORE_SMALL_SHM",
        f"/dev/shm is {bytes_gib(shm)} (< 30% of {bytes_gib(ram)} RAM): Ray's object store falls back to /tmp",
        detail="'The object store is using /tmp instead of /dev/shm' - slower, and fills the disk.",
        fix=f"docker run --shm-size={int(0.3 * ram) // GIB + 1}g ...",
    )


def ray_tmp(facts: Facts) -> Iterator[Finding]:
    if _ray(facts) is None:
        return
    tmp = facts.env_value("RAY_TMPDIR") or facts.env_value("TMPDIR") or "/tmp"
    free = facts.disk_free(tmp)
    if isinstance(free, int) and free < TMP_LOW:
        yield finding(
            "RAY_TMP_DISK_FULL",
            f"{bytes_gib(free)} free at {tmp}, Ray's session directory",
            detail="Ray stops with '/tmp/ray/session_... is over 95% full' as logs and spills grow.",
            fix=f"rm -rf {tmp}/ray/session_2*  (old sessions), or ray start --temp-dir=<big disk>",
        )
    if len(tmp.rstrip("/")) + RAY_SOCKET_SUFFIX > AF_UNIX_MAX:
        yield finding(
            "RAY_AF_UNIX_PATH_TOO_LONG",
            f"temp dir {tmp} ({len(tmp)} chars) makes Ray's socket paths exceed {AF_UNIX_MAX} bytes",
            detail="'OSError: AF_UNIX path length cannot exceed 107 bytes' at ray.init().",
        )


def _needs_ray(facts: Facts) -> bool:
    return facts.plan.use_ray is True


def _raised(facts: Facts) -> Literal["error"] | None:
    """A plan that uses Ray makes a cluster problem certain to stop the run."""
    return "error" if _needs_ray(facts) else None


def ray_cluster(facts: Facts) -> Iterator[Finding]:
    """The cluster ray.init() would use: gone, not answering, or left behind."""
    ray = _ray(facts)
    if ray is None:
        return
    state, address = ray.cluster, shown(ray.address, "None")
    severity = _raised(facts)
    if state == "stale":
        yield finding(
            "RAY_CLUSTER_STALE",
            f"Ray's cluster file names {address}, but no head answers there",
            detail=(
                f"{shown(ray.cluster_file, 'None')} was left by a head that is gone (killed, or "
                f"the machine restarted); ray.init() would try it and fail. {ray.error or ''}"
            ).strip(),
            severity=severity,
        )
    elif state in ("unreachable", "unhealthy"):
        client = ray.client
        via = (
            f"RAY_ADDRESS={shown(client.ray_address, 'None') if client else None}"
            if ray.source == "RAY_ADDRESS"
            else shown(ray.source, "None")
        )
        yield finding(
            "RAY_CLUSTER_UNREACHABLE",
            f"Ray cluster at {address} ({via}) "
            + ("reports an unhealthy GCS" if state == "unhealthy" else "does not answer"),
            detail=str(ray.error or ""),
            severity=severity,
        )


def ray_client_address(facts: Facts) -> Iterator[Finding]:
    """What ray.init() would do with RAY_ADDRESS, against the heads that run here."""
    ray = _ray(facts)
    client = ray.client if ray else None
    if not client or ray is None:
        return
    action = client.action
    if action == "fail":
        yield finding(
            "RAY_ADDRESS_INVALID",
            f"ray.init() would fail: {shown(client.error, 'None')}",
            severity=_raised(facts),
        )
    heads = list(ray.local_heads or ())
    # RAY_ADDRESS=local also starts a new instance, but on purpose: only an unset one misses
    unset = client.ray_address in (None, NOT_PROBED)
    if action == "start-local" and unset and heads and ray.cluster != "stale":
        where = f" (started with --temp-dir {ray.temp_dir})" if ray.temp_dir else ""
        yield finding(
            "RAY_INIT_MISSES_LOCAL_HEAD",
            f"ray.init() would start a new private Ray, not join the head at {heads[0]}{where}",
            detail=(
                "RAY_ADDRESS is unset and ray.init() finds no address file where it looks "
                "(<RAY_TMPDIR|TMPDIR|/tmp>/ray/ray_current_cluster)."
            ),
            fix=f"export RAY_ADDRESS={heads[0]}",
            severity=_raised(facts),
        )


def ray_version_match(facts: Facts) -> Iterator[Finding]:
    ray = _ray(facts)
    if ray is None:
        return
    head, mine = ray.head_version, ray.version
    if ray.cluster == "running" and head and mine and head != mine:
        yield finding(
            "RAY_VERSION_MISMATCH",
            f"the head at {shown(ray.address, 'None')} runs Ray {head}, this Python has Ray {mine}",
            detail="ray.init() refuses to connect: 'Version mismatch: The cluster was started with ...'",
            fix=f"{pip_command(facts)} install 'ray[default]=={head}' (or restart the head with {mine})",
        )


CHECKS = (ray_windows, ray_shm, ray_tmp, ray_cluster, ray_client_address, ray_version_match)
