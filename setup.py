"""Only here to ship the repo-root `profiles/` (and the project files) inside the wheel.

`profiles/*.yaml` lives at the repository root (where users look for it); a built wheel
carries a copy as `shop_r1_doctor/profiles_data/`, which `profiles_dir()` falls back to.
`pyproject.toml` and `README.md` go to `shop_r1_doctor/_bundle/`: `shop-r1 build-image`
copies them into the image's build context when it runs from an installed wheel.
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
        bundle = Path(self.build_lib, "shop_r1_doctor", "_bundle")
        bundle.mkdir(parents=True, exist_ok=True)
        for name in ("pyproject.toml", "README.md"):
            source = Path(__file__).parent / name
            if source.is_file():
                shutil.copy2(source, bundle / name)


setup(cmdclass={"build_py": BuildPyWithProfiles})
