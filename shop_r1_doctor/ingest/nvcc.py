"""`nvcc --version`: the CUDA toolkit's compiler names its release on one line
(`Cuda compilation tools, release 12.0, V12.0.140`) under its banner (`nvcc: NVIDIA (R)
Cuda compiler driver`, the copyright, `Built on ...`, `Build cuda_12.0.r12.0/...`).

The release is the toolkit a source build would compile with, not the driver's CUDA or
the one torch was built for. The first release in a paste wins (a second `nvcc --version`
is another machine or another PATH).
"""

from __future__ import annotations

import re

from shop_r1_doctor.ingest._common import Line, Partial

_RELEASE = re.compile(r"^\s*Cuda compilation tools, release (?P<release>\d+\.\d+), V\d+\.\d+")
_BANNER = re.compile(
    r"^\s*(?:nvcc: NVIDIA \(R\) Cuda compiler driver|Copyright \(c\) \d{4}-\d{4} NVIDIA Corporation"
    r"|Built on \w+|Build cuda_\d+\.\d+\.)"
)


def parse(lines: list[Line], where: str) -> Partial | None:
    del where  # a line either is nvcc's or is not: nothing here is malformed
    out = Partial("nvcc")
    for line in lines:
        m = _RELEASE.match(line.text)
        if m:
            out.section("cuda_toolkit").setdefault("nvcc_version", m.group("release"))
            out.lines.append(line.number)
        elif _BANNER.match(line.text):
            out.lines.append(line.number)  # nvcc's own banner: no other reader's to take
    return out if "cuda_toolkit" in out.facts else None
