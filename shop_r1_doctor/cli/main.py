"""The doctor's half of `shop-r1`: its command groups, the root options, the error boundary.

The full `shop-r1` entry point is `shop_r1.cli` (it adds the trainer's groups to the app
built here); this module never imports the trainer, so the doctor stands alone and
`python -m shop_r1_doctor.cli.main` runs the doctor-only commands (doctor, profiles,
build-image, launch, report, run).

Each group module imports only typer at module level; the work it calls is imported
inside the command function, so `shop-r1 --help` stays fast in any environment.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import typer

from shop_r1_doctor import __version__
from shop_r1_doctor.cli import build_image, doctor, launch, profiles, report, run, setup
from shop_r1_doctor.cli.output import Output, ShopR1Group

DOCTOR_GROUPS = (doctor, profiles, build_image, launch, report, run, setup)


def _version(value: bool) -> None:
    if value:
        Output().line(f"shop-r1 {__version__}")
        raise typer.Exit()


def make_app(
    help_text: str, launch_config_checks: Mapping[str, launch.ConfigCheck] | None = None
) -> typer.Typer:
    """A root app with `--version`, `-h` and the doctor's groups registered.

    `launch_config_checks` validate `launch --config` for each task; the doctor has none
    of its own (the training config is the trainer's), so the entry point that has the
    trainer passes them in, and without them `launch --config` refuses in one line."""
    root = typer.Typer(
        name="shop-r1",
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        cls=ShopR1Group,  # the error boundary: one line per failure, documented exit codes
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @root.callback(help=help_text)
    def _root(
        version: bool = typer.Option(
            False, "--version", callback=_version, is_eager=True, help="Print the version."
        ),
    ) -> None:
        pass

    for group in DOCTOR_GROUPS:
        if group is launch:
            launch.register(root, launch_config_checks)
        else:
            group.register(root)
    return root


# Commands that probe torch in a child unless told not to (`--fast`) or given the facts.
_PROBING = {"doctor", "report"}
_NOT_PROBING = ("--fast", "--from", "--snapshot", "-h", "--help", "--version")


def prestart_probes(argv: Sequence[str]) -> None:
    """Start the torch probe's child first thing when the command line will need it:
    `import torch` is the critical path of a cold `doctor`, and this overlaps it with
    loading the CLI. The probe adopts the child, or kills it where the cache answers."""
    words = [word for word in argv if not word.startswith("-")]
    if not words or words[0] not in _PROBING:
        return
    if any(arg.split("=", 1)[0] in _NOT_PROBING for arg in argv):
        return
    from shop_r1_doctor.probes import torch_probe

    torch_probe.prestart()


def run_app(root: typer.Typer) -> None:
    """Errors are formatted once, by ShopR1Group (SHOP_R1_DEBUG=1: tracebacks)."""
    root(prog_name="shop-r1")


app = make_app("Environment doctor for Shop-R1 (the trainer's commands: `shop-r1`).")


def main() -> None:
    prestart_probes(sys.argv[1:])
    run_app(app)


if __name__ == "__main__":
    main()
