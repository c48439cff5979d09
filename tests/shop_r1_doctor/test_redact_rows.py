"""Redaction decision rows with the whole expected output: what goes, and exactly what is
kept around it (quotes, headers, the user name of a URL, line breaks). Hand-written from
the layer rules in `shop_r1_doctor/redact.py`."""

from __future__ import annotations

import socket

import pytest

from shop_r1_doctor.redact import is_secret_name, redact_home, redact_hosts, redact_text

R = "<redacted>"
MIXED = "Zq7Xk2Lm9Pw4Rt6Yv8Bn3Cd5Fg1Hj0Ka"  # 34 chars, lower + upper + digits
HEX_UP = "0123456789ABCDEF0123456789ABCDEF"
HEX_LOW = "0123456789abcdef0123456789abcdef"
LOW_DIGITS = "zq7xk2lm9pw4rt6yv8bn3cd5fg1hj0ka"  # no capitals: a slug, not a key
UP_DIGITS = "ZQ7XK2LM9PW4RT6YV8BN3CD5FG1HJ0KA"  # no lower case: an id, not a key

# (text, redacted text)
TEXT_ROWS = [
    # layer 6: long runs on a line that names a key word (`wandb` starts the line)
    (f"wandb: uploading with {MIXED}", f"wandb: uploading with {R}"),
    (f"wandb: uploading with {HEX_UP}", f"wandb: uploading with {R}"),
    (f"wandb: uploading with {HEX_LOW}", f"wandb: uploading with {R}"),
    (f"wandb: uploading with {LOW_DIGITS}", f"wandb: uploading with {LOW_DIGITS}"),
    (f"wandb: uploading with {UP_DIGITS}", f"wandb: uploading with {UP_DIGITS}"),
    (f"wandb: artifact {MIXED[:16]}//{MIXED[16:]}", f"wandb: artifact {MIXED[:16]}//{MIXED[16:]}"),
    # one line per line: the break survives
    (f"wandb: one {MIXED}\nwandb: two {MIXED}\n", f"wandb: one {R}\nwandb: two {R}\n"),
    # a git log line: the hash word comes first, the key word later, no secret word between
    (
        f"commit {HEX_LOW}01234567 rotates the api key",
        f"commit {HEX_LOW}01234567 rotates the api key",
    ),
    (
        f"commit 1a2b3c4: rotate key, new one {HEX_LOW}",
        f"commit 1a2b3c4: rotate key, new one {R}",
    ),
    # ... but a secret word nearer than the hash word makes it a secret
    (f"git sha of the token: {HEX_LOW}", f"git sha of the token: {R}"),
    # layer 5 keeps quotes and the word, replaces only the value
    (f"API key: '{MIXED}'", f"API key: '{R}'"),
    ("Paste your API key: ...", "Paste your API key: ..."),
    ("token: 1234567X", f"token: {R}"),  # not a number once the letter counts
    # layer 4: empty, placeholder and call values are not secrets
    ('token=""', 'token=""'),
    ("usage: hub login --token TOKEN", "usage: hub login --token TOKEN"),
    ("token=get_token()", "token=get_token()"),
    (f"token={MIXED}", f"token={R}"),
    # layer 2: a placeholder cut at a space stays whole
    ("Authorization: Bearer <your token>", "Authorization: Bearer <your token>"),
    (f"Authorization: Bearer {MIXED}", f"Authorization: Bearer {R}"),
    # layer 3: user:password@ and a token-long user alone (16 characters and up)
    ("https://alice:@git.example.com/r.git", "https://alice:@git.example.com/r.git"),
    ("https://alice:s3cr3t@git.example.com/r.git", f"https://alice:{R}@git.example.com/r.git"),
    ("https://a1b2c3d4e5f6g7h8@git.example.com/r", f"https://{R}@git.example.com/r"),
    ("https://a1b2c3d4e5f6g7h@git.example.com/r", "https://a1b2c3d4e5f6g7h@git.example.com/r"),
]


@pytest.mark.parametrize(("text", "want"), TEXT_ROWS)
def test_redact_text_row(text, want):
    assert redact_text(text, home="/nonexistent-home") == want


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("_", False),  # bash's `_` variable: no words at all
        ("$HF_HUB_DISABLE_IMPLICIT_TOKEN", False),  # a switch, also as a shell variable
        ("HF_HUB_DISABLE_IMPLICIT_TOKEN", False),
        ("openaiapikey", True),
        ("KEY", False),  # one word: too vague
        ("DEPLOY_KEY", True),  # an all-caps env name ending in KEY
        ("deploy_key", False),  # lower case: a dict key, a sort key
    ],
)
def test_is_secret_name_row(name, secret):
    assert is_secret_name(name) is secret


# ----------------------------------------------------------------- home directories
@pytest.mark.parametrize(
    ("home", "text", "want"),
    [
        ("/data/alice/", "/data/alice/runs", "~/runs"),  # trailing slash ignored
        ("/srv/MAX", "/srv/MAX/runs", "~/runs"),
        (".", "Done. See ./runs.", "Done. See ./runs."),  # a one-character home is no home
    ],
)
def test_redact_home_row(home, text, want):
    assert redact_home(text, home) == want


def test_home_defaults_to_this_users_home(monkeypatch):
    monkeypatch.setenv("HOME", "/data/carol")
    assert redact_home("/data/carol/x") == "~/x"
    # redact_text passes its own home through
    assert redact_text("/data/dave/x and /data/carol/y", home="/data/dave") == (
        "~/x and /data/carol/y"
    )


# ----------------------------------------------------------------- hosts and addresses
# (text, redacted text); host name fixed so only the address rules apply
IP_ROWS = [
    ("peer 10.0.0.255 down", "peer <ip> down"),
    ("peer 10.0.0.256 down", "peer 10.0.0.256 down"),  # not an address
    ("version 4.11.0.86", "version 4.11.0.86"),  # at the very start of the text
    ("Version 4.11.0.86 installed", "Version 4.11.0.86 installed"),
    ("mylib 4.12.0.88 requires numpy<2", "mylib 4.12.0.88 requires numpy<2"),
    ("mylib 4.12.0.88 needs numpy<2", "mylib <ip> needs numpy<2"),
]


@pytest.mark.parametrize(("text", "want"), IP_ROWS)
def test_redact_hosts_address_row(text, want):
    assert redact_hosts(text, hostname="zz-no-such-host") == want


@pytest.mark.parametrize(
    ("hostname", "text", "want"),
    [
        ("gpu7.cluster.local", "on GPU7.CLUSTER.LOCAL", "on <host>"),
        ("localhost", "connect to localhost:8000", "connect to localhost:8000"),
        ("localhost.localdomain", "localhost.localdomain up", "localhost.localdomain up"),
        ("ab", "ab cd", "ab cd"),  # two letters: too likely a word
        ("abc", "abc cd", "<host> cd"),
    ],
)
def test_redact_hosts_name_row(hostname, text, want):
    assert redact_hosts(text, hostname=hostname) == want


def test_this_machines_full_and_short_name(monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu01.rack2.example.com")
    text = "gpu01.rack2.example.com (gpu01) rack2"
    assert redact_hosts(text) == "<host> (<host>) rack2"


def test_no_hostname_when_the_os_has_none(monkeypatch):
    def fail() -> str:
        raise OSError("no name")

    monkeypatch.setattr(socket, "gethostname", fail)
    assert redact_hosts("gpu01 at 10.1.2.3") == "gpu01 at <ip>"
