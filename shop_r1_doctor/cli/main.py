"""Wires the command groups of `shop-r1`. Nothing heavy is imported here.

Each group module imports only typer at module level; the work it calls is imported
inside the command function, so `shop-r1 --help` stays fast in any environment.
"""

from __future__ import annotations

import typer

from shop_r1.commands import data, demo, score, train
from shop_r1.commands import eval as eval_cmd
from shop_r1_doctor import __version__
from shop_r1_doctor.cli import build_image, doctor, launch, profiles, report, run
from shop_r1_doctor.cli.output import ShopR1Group

app = typer.Typer(
    name="shop-r1",
    help="Environment doctor and trainer for Shop-R1 (SFT then GRPO on shopper actions).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=ShopR1Group,  # the error boundary: one line per failure, documented exit codes
    context_settings={"help_option_names": ["-h", "--help"]},
)

doctor.register(app)
profiles.register(app)
build_image.register(app)
launch.register(app)
report.register(app)
run.register(app)
data.register(app)
score.register(app)
train.register(app)
eval_cmd.register(app)
demo.register(app)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"shop-r1 {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Environment doctor and trainer for Shop-R1."""


def main() -> None:
    """Entry point; errors are formatted once, by ShopR1Group (SHOP_R1_DEBUG=1: tracebacks)."""
    app(prog_name="shop-r1")


if __name__ == "__main__":
    main()
