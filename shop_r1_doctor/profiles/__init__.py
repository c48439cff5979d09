"""Hardware profiles: typed records loaded from `profiles/*.yaml`, checked against the
compatibility knowledge, and matched to a machine's facts."""

from __future__ import annotations

from shop_r1_doctor.profiles.match import ProfileMatch, match_profile
from shop_r1_doctor.profiles.model import Profile, get_profile, load_profiles, profiles_dir

__all__ = [
    "Profile",
    "ProfileMatch",
    "get_profile",
    "load_profiles",
    "match_profile",
    "profiles_dir",
]
