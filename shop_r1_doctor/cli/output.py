"""One output object and one error boundary for every `shop-r1` command.

- `ShopR1Group` is the root click group: usage errors, `ToolError`s, I/O failures and
  Ctrl-C become one line on stderr (`shop-r1: error: ...`) with a documented exit status;
  `SHOP_R1_DEBUG=1` re-raises with the traceback. Anything else is a bug and keeps its
  traceback, so the bad-input harness (tests/cli) can tell the two apart.
- `Output` prints a command's data once: human (rich, respects NO_COLOR) or `--json`
  with a versioned `schema` name.
- `progress()` is the one progress bar (totals, rate, ETA) on stderr; it draws nothing
  when stderr is not a terminal, so logs and pipes stay clean.

Only typer/click/rich are imported here; the module is safe to import from both halves.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup, TyperOption

from shop_r1_doctor.errors import ToolError


def _click_class(public: type, name: str) -> Any:
    """click's class `name`, found among the bases of one of typer's public exports.

    typer >= 0.20 vendors click in a private module (`typer._click`), older typer uses the
    click package; either way `typer.BadParameter` is click's, so its bases are the
    exception classes typer raises. No import of a private module, one path for both."""
    for cls in public.__mro__:
        if cls.__name__ == name:
            return cls
    raise ImportError(f"typer {typer.__version__}: {public.__name__} has no base {name}")


ClickException = _click_class(typer.BadParameter, "ClickException")

PROG = "shop-r1"
EXIT_INTERRUPTED = 130  # as a shell reports SIGINT

# Exit statuses, the same for every command (README "Exit codes" documents them).
EXIT_CODES = {
    0: "success",
    1: "ran and found problems (doctor errors, invalid rows, preflight errors)",
    2: "could not run (bad input, unreadable/unwritable path, unreachable server)",
    130: "interrupted (Ctrl-C), nothing half-written left",
}


def debug() -> bool:
    return os.environ.get("SHOP_R1_DEBUG", "") not in ("", "0")


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def _os_error_line(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else ""
    if exc.filename2 is not None:
        where = f"{where} -> {exc.filename2}"
    prefix = f"{where}: " if where else ""
    if isinstance(exc, IsADirectoryError):
        return f"{prefix}is a directory; give a file path"
    if isinstance(exc, NotADirectoryError):
        return f"{prefix}a part of this path is a file, not a directory; choose another path"
    if isinstance(exc, PermissionError):
        return f"{prefix}permission denied; choose a path you may use or fix its permissions"
    if isinstance(exc, FileNotFoundError):
        return f"{prefix}no such file or directory; check the path"
    if exc.errno == errno.ENOSPC:
        return f"{prefix}no space left on the device; free space or write elsewhere"
    if exc.errno == errno.EROFS:
        return f"{prefix}read-only file system; write somewhere else"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{prefix}{reason}"


def error_line(exc: BaseException) -> tuple[str, int] | None:
    """The one line and exit status for an expected failure; None for a bug."""
    if isinstance(exc, ToolError):
        return _one_line(str(exc)), exc.exit_code
    if isinstance(exc, OSError):
        return _one_line(_os_error_line(exc)), 2
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"input is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "convert the file to UTF-8",
            2,
        )
    if isinstance(exc, MemoryError):
        return "out of memory; use a smaller input or a machine with more memory", 2
    return None


def _say(line: str, prog: str = PROG) -> None:
    sys.stderr.write(f"{prog}: error: {line}\n")
    sys.stderr.flush()


def _is_no_args_help(exc: Any) -> bool:
    """click's NoArgsIsHelpError (a group called bare shows its help), known by its class
    name: it is not among the bases of typer's public exports."""
    return any(cls.__name__ == "NoArgsIsHelpError" for cls in type(exc).__mro__)


def _usage_line(exc: Any) -> str:
    msg = _one_line(exc.format_message())
    ctx = getattr(exc, "ctx", None)
    if ctx is not None:
        return f"{msg} (see {ctx.command_path} -h)"
    return msg


# --- readable help: `--data PATH`, not `<str>`; flags show no placeholder ---

_METAVARS = {"int": "N", "float": "NUMBER", "path": "PATH", "str": "TEXT", "bool": ""}


def _readable_metavars(cmd: Any) -> None:
    make_help = cmd.get_help_option

    def help_option(ctx: typer.Context) -> Any:
        opt = make_help(ctx)
        if opt is not None:
            opt.metavar = ""
        return opt

    cmd.get_help_option = help_option
    for param in cmd.params:
        # typer 0.29's `<str>`-style labels come from display_type; older typer has none
        if param.metavar is not None or not isinstance(param, TyperOption):
            continue
        if not hasattr(param, "display_type"):
            continue
        if param.is_flag:
            param.metavar = ""
            continue
        label = param.display_type(typer.Context(cmd)).strip("<>")
        if "|" in label:  # a choice: keep the choices
            continue
        base = label.removeprefix("list[").removesuffix("]")
        param.metavar = _METAVARS.get(base, base.upper())
    for sub in getattr(cmd, "commands", {}).values():
        _readable_metavars(sub)


class ShopR1Group(TyperGroup):
    """Root group: usage errors and expected failures as one line (see module doc)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        _readable_metavars(self)
        if not self.epilog:  # `shop-r1 -h` ends with the exit statuses
            self.epilog = "Exit status: " + "; ".join(f"{k} {v}" for k, v in EXIT_CODES.items())
        try:
            rv = super().main(args, prog_name or PROG, complete_var, standalone_mode=False, **extra)
        except ClickException as exc:
            if _is_no_args_help(exc):
                exc.show()
                code = exc.exit_code
                return self._exit(code, standalone_mode)
            ctx = getattr(exc, "ctx", None)
            _say(_usage_line(exc), ctx.command_path if ctx is not None else PROG)
            code = exc.exit_code
        except typer.Abort:
            _say("aborted")
            code = 1
        else:
            # standalone_mode=False returns an Exit's status, else the command's value
            code = rv if isinstance(rv, int) else 0
        return self._exit(code, standalone_mode)

    @staticmethod
    def _exit(code: int, standalone_mode: bool) -> int:
        if not standalone_mode:
            return code
        sys.exit(code)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, ClickException, typer.Abort):
            raise
        except KeyboardInterrupt:
            if debug():
                raise
            _say(
                "interrupted; a file being written was discarded (finished ones are kept); run the command again"
            )
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:  # `shop-r1 ... | head`: the reader left; say nothing
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 -- silences the final flush
            raise typer.Exit(1) from None
        except (Exception, MemoryError) as exc:
            found = error_line(exc)
            if found is None or debug():
                raise
            _say(found[0])
            raise typer.Exit(found[1]) from None


# --- one output object ---


class Output:
    """A command's output, in one place: human (plain lines, rich tables) or `--json`.

    With `as_json`, stdout carries only the JSON document: every human line a command
    prints through `line`/`print` goes to stderr instead, so `--json` stays parseable."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json

    def console(self, stderr: bool = False) -> Any:
        from rich.console import Console

        return Console(stderr=stderr or self.as_json, highlight=False)

    def emit(self, schema: str, payload: Any, human: Callable[[Any], None] | None = None) -> None:
        """JSON: `{"schema": ..., **payload}` (a list goes under "items"); else `human`."""
        if self.as_json or human is None:
            typer.echo(self.json_text(schema, payload), nl=False)
        else:
            human(self.console())

    @staticmethod
    def json_text(schema: str, payload: Any) -> str:
        """The `--json` document as text, for a command that also saves it to a file."""
        body = dict(payload) if isinstance(payload, dict) else {"items": payload}
        body = {k: v for k, v in body.items() if k != "schema"}
        return json.dumps({"schema": schema, **body}, indent=2, ensure_ascii=False) + "\n"

    def line(self, text: str = "", *, err: bool = False, nl: bool = True) -> None:
        """A human line: stdout, or stderr when `err` or when stdout holds JSON."""
        typer.echo(text, err=err or self.as_json, nl=nl)

    def print(self, *renderables: Any, err: bool = False, **options: Any) -> None:
        """Rich text or tables (markup such as `[red]`), on the same streams as `line`;
        `options` are rich's (`markup=False` for text that is not markup)."""
        self.console(stderr=err).print(*renderables, **options)

    def findings(
        self, findings: Iterable[Any], *, err: bool = False, ignored: Iterable[str] = ()
    ) -> None:
        """Findings as the doctor prints them (render/findings.py): one block each, marks
        in the stream's encoding, colour on a terminal only; `ignored` codes say so."""
        from shop_r1_doctor.api import render_finding

        to_err = err or self.as_json
        stream = sys.stderr if to_err else sys.stdout
        skip = set(ignored)
        for f in findings:
            note = "ignored" if f.code in skip else ""
            typer.echo(render_finding(f, stream=stream, note=note), err=to_err, nl=False)

    def write(self, text: str) -> None:
        """Text rendered elsewhere (a report, a document) to stdout, as it is."""
        sys.stdout.write(text)
        sys.stdout.flush()

    def note(self, text: str) -> None:
        """A human remark; goes to stderr so `--json` stdout stays parseable."""
        typer.echo(text, err=True)


class _Bar:
    """`advance(n=1)` for a progress bar, and `set_total(n)` once the total is known."""

    def __init__(self, bar: Any = None, task: Any = None) -> None:
        self.bar, self.task = bar, task

    def __call__(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def set_total(self, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=total)


@contextmanager
def progress(description: str, total: int | None, unit: str = "") -> Iterator[_Bar]:
    """A progress bar with count, elapsed time and ETA on stderr; yields a `_Bar`.

    Transient and drawn only on a terminal: pipes and CI logs get nothing."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    if not console.is_terminal:
        yield _Bar()
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn() if unit == "bytes" else MofNCompleteColumn(),
        TextColumn("" if unit == "bytes" else unit),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    with bar:
        yield _Bar(bar, bar.add_task(description, total=total))
