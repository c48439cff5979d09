"""The `shop-r1` entry point: wiring only, above both packages.

The doctor's groups (doctor, profiles, build-image, launch, report, run, setup) come with
the root app from `shop_r1_doctor.cli.main`, given the trainer's check of `launch --config`;
the trainer's groups (data, score, train, eval, demo) are added here. Nothing heavy is
imported: each group imports its work inside the command. Nothing imports this module
(an import-linter contract), and it changes no other module's state.
"""

from __future__ import annotations

import sys

from shop_r1.commands import data, demo, score, train
from shop_r1.commands import eval as eval_cmd
from shop_r1_doctor.cli.main import make_app, prestart_probes, run_app

app = make_app(
    "Environment doctor and trainer for Shop-R1 (SFT then GRPO on shopper actions).",
    launch_config_checks=train.launch_config_checks(),
)
for group in (data, score, train, eval_cmd, demo):
    group.register(app)


def main() -> None:
    """Entry point: known failures become one line and exit 2 (SHOP_R1_DEBUG=1 for tracebacks)."""
    prestart_probes(sys.argv[1:])
    run_app(app)


if __name__ == "__main__":
    main()
