"""`--profile WHAT`: profile names, GPU names and compute capabilities resolve to the
profile the doctor's match picks for that GPU; anything else is one line with a
did-you-mean."""

from __future__ import annotations

import pytest

from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.profiles.lookup import parse_capability, resolve_profile


@pytest.mark.parametrize(
    ("typed", "profile"),
    [
        ("blackwell", "blackwell"),  # a name wins over everything: the family image
        ("Blackwell-RTX", "blackwell-rtx"),
        ("RTX PRO 6000", "blackwell-rtx"),  # the seed incident's card, as users write it
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "blackwell-rtx"),
        ("RTX 5090", "blackwell-rtx"),
        ("sm_120", "blackwell-rtx"),
        ("12.0", "blackwell-rtx"),
        ("12.1", "blackwell-rtx"),
        ("sm_100", "blackwell-dc"),
        ("B200", "blackwell-dc"),
        ("GB300", "blackwell-dc"),  # only the profile's name patterns know it
        ("H100", "hopper"),
        ("NVIDIA H200 NVL", "hopper"),
        ("9.0", "hopper"),
        ("sm90", "hopper"),
        ("GeForce RTX 4090", "ada"),
        ("L40S", "ada"),
        ("A100", "ampere"),
        ("8.6", "ampere"),
        ("T4", "turing"),
    ],
)
def test_profile_resolves_from_what_users_type(typed, profile):
    assert resolve_profile(typed).profile.name == profile


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("hoppr", "did you mean 'hopper'"),
        ("blackwel", "did you mean 'blackwell'"),
        ("RTX", "not a profile, GPU or compute capability"),  # RTX 50, 40, 30...: ambiguous
        ("sm_61", "no profile builds for sm_61"),  # Pascal
        ("", "not a profile"),
    ],
)
def test_profile_unknown_is_one_line(typed, words):
    with pytest.raises(ToolError) as err:
        resolve_profile(typed)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_capability_spellings():
    assert parse_capability("sm_120") == parse_capability("120") == (12, 0)
    assert parse_capability("10.3") == (10, 3)
    assert parse_capability("9") is None and parse_capability("H100") is None
