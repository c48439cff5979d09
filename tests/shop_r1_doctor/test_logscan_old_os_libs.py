"""Readings learned from held-out batch 20: the dynamic loader's versioned-symbol check,
a C++ runtime or a C library older than a compiled module needs. Codes and severities
only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings


@pytest.mark.parametrize(
    "line",
    [
        # a conda env's extension under the image's older libstdc++
        "ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.29' not"
        " found (required by /opt/conda/envs/py38/lib/python3.8/site-packages/scipy/spatial/"
        "_ckdtree.cpython-38-x86_64-linux-gnu.so)",
        # the C++ ABI tag, and typographic quotes as a terminal or a forum renders them
        "OSError: /lib64/libstdc++.so.6: version `CXXABI_1.3.13' not found (required by"
        " /venv/lib/python3.10/site-packages/tokenizers/tokenizers.so)",
        "/usr/lib/libstdc++.so.6: version ‘GLIBCXX_3.4.30’ not found (required by ./train_bin)",
    ],
)
def test_an_older_cpp_runtime_than_the_module_needs(line):
    assert readings(line)[0] == ("LIBSTDCXX_TOO_OLD", "error")


@pytest.mark.parametrize(
    "line",
    [
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.14' not found (required by"
        " /envs/pytorch/lib/python3.7/site-packages/torch/lib/libshm.so)",
        "ImportError: /lib64/libm.so.6: version `GLIBC_2.27' not found (required by"
        " /envs/trl/lib/python3.11/site-packages/torch/lib/../../../../libcurand.so.10)",
        "./vllm-server: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found"
        " (required by ./vllm-server)",
        # typographic quotes, as a localized loader message or a forum paste has them
        "ImportError: /lib/aarch64-linux-gnu/libc.so.6: version ‘GLIBC_2.28’ not found (required"
        " by /envs/vits/lib/python3.7/site-packages/torch/lib/libtorch_python.so)",
    ],
)
def test_an_older_c_library_than_the_binary_needs(line):
    assert readings(line)[0] == ("GLIBC_TOO_OLD", "error")


@pytest.mark.parametrize(
    "text",
    [
        # a symbol missing from a library (ABI, not a version of the runtime)
        "ImportError: /venv/lib/python3.10/site-packages/foo.so: undefined symbol: memcpy",
        # a package version pip cannot find
        "ERROR: No matching distribution found for glibc==2.34",
        # the loader's own version line printed by ldd
        "ldd (Debian GLIBC 2.36-9+deb12u4) 2.36",
    ],
)
def test_other_library_messages_are_not_an_old_runtime(text):
    assert not {"GLIBC_TOO_OLD", "LIBSTDCXX_TOO_OLD"} & set(codes(text))
