"""A training script printing non-ASCII text (a Chinese prompt, an emoji from a chat
template or a progress line) to a stdout whose encoding is ASCII: PYTHONIOENCODING=ascii
(set in some images and launchers), or the C locale with Python's UTF-8 mode turned off
(LC_ALL=C PYTHONUTF8=0: no locale coercion, ASCII for stdio and for open()).

Expected: WIN_CONSOLE_GBK_ENCODING (stdout's encoding is not UTF-8 and neither PYTHONUTF8
nor PYTHONIOENCODING makes it so); the negative encodes to ASCII in the user's own code.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "console_encoding"
EXPECTED = ("WIN_CONSOLE_GBK_ENCODING",)
C_LOCALE = {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}
CASES = (
    FaultCase(
        FAMILY,
        "pythonioencoding_ascii_print",
        EXPECTED,
        "PYTHONIOENCODING=ascii: print() of a step line holding a Chinese prompt and an emoji",
        env={"PYTHONIOENCODING": "ascii"},
        timeout=30,
    ),
    FaultCase(
        FAMILY,
        "c_locale_logging",
        EXPECTED,
        "LANG=C LC_ALL=C PYTHONUTF8=0: logging to stdout (logging.basicConfig(stream=sys.stdout))"
        " of a sample completion in Chinese (logging prints its error and the run goes on),"
        " then print() of a progress line with an emoji",
        env=C_LOCALE,
        timeout=30,
    ),
    FaultCase(
        FAMILY,
        "c_locale_write_jsonl",
        EXPECTED,
        "LANG=C LC_ALL=C PYTHONUTF8=0: open(path, 'w') (the locale's encoding) and json.dumps("
        "ensure_ascii=False) of Chinese samples into a JSON Lines file",
        env=C_LOCALE,
        timeout=30,
    ),
    FaultCase(
        FAMILY,
        "user_encodes_ascii",
        (),
        "PYTHONIOENCODING=utf-8: the user's own code encodes a Chinese product name with"
        " .encode('ascii') for a cache key",
        env={"PYTHONIOENCODING": "utf-8"},
        timeout=30,
    ),
)

SAMPLE = "用户: 帮我找一双跑鞋 🏃 -> 助手: search[running shoes]"


def pythonioencoding_ascii_print(work: Path) -> None:
    print(f"step 1/10 loss 0.6931 sample: {SAMPLE}")


def c_locale_logging(work: Path) -> None:
    import logging

    logging.basicConfig(stream=sys.stdout, level=logging.INFO)
    logging.getLogger("train").info("sample completion: %s", SAMPLE)
    print("step 1/10 done ✅")


def c_locale_write_jsonl(work: Path) -> None:
    import json

    with open(work / "samples.jsonl", "w") as f:
        f.write(json.dumps({"completion": SAMPLE}, ensure_ascii=False) + "\n")


def user_encodes_ascii(work: Path) -> None:
    name = "跑鞋 Air Zoom"
    key = name.encode("ascii")
    print(key)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)
