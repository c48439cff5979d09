"""The one exception the CLI turns into a single line and exit status 2."""

from __future__ import annotations


class ToolError(Exception):
    """The tool itself could not run (bad input file, unreadable snapshot, ...).

    The message is shown as one line with no traceback, so it must name the file,
    line or field at fault and what to do about it.
    """

    exit_code = 2
