"""Only here to ship the repo-root `profiles/` inside the wheel.

`profiles/*.yaml` lives at the repository root (where users look for it); a built wheel
carries a copy as `shop_r1_doctor/profiles_data/`, which `profiles_dir()` falls back to.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithProfiles(build_py):
    def run(self) -> None:
        super().run()
        dest = Path(self.build_lib, "shop_r1_doctor", "profiles_data")
        dest.mkdir(parents=True, exist_ok=True)
        for profile in sorted(Path(__file__).parent.joinpath("profiles").glob("*.yaml")):
            shutil.copy2(profile, dest / profile.name)


setup(cmdclass={"build_py": BuildPyWithProfiles})
