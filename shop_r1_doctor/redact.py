"""Redaction applied before anything is written or printed.

Reports get pasted into public issues. Tokens, secret-looking env values and
credentials in URLs are replaced; the home directory becomes `~`. Version strings,
commit hashes and ordinary paths are kept: they are what a maintainer needs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

REDACTED = "<redacted>"

# Names of env vars / options / keys whose *values* are secret.
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW(OR)?D|PASSPHRASE|API[_-]?KEY|APIKEY|ACCESS[_-]?KEY|PRIVATE[_-]?KEY|"
    r"CREDENTIAL|AUTH|SESSION[_-]?KEY|COOKIE|SIGNATURE|\bKEY$|_KEY$)",
    re.IGNORECASE,
)
# Names that match the pattern above but hold no secret.
NOT_SECRET_NAMES = frozenset({"TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_IMPLICIT_TOKEN"})


def is_secret_name(name: str) -> bool:
    return name.upper() not in NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Secret-looking names get `<redacted>`; every other value is text-redacted."""
    return {k: (REDACTED if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


_TOKEN_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),  # Hugging Face
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"),  # OpenAI / Anthropic style
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),  # Slack
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),  # JWT
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.S),
]
# `--api-key X`, `--hf_token=X`, `token: X`, `"password": "X"`, `WANDB_API_KEY=X`
_NAMED_VALUE = re.compile(
    r"(?P<name>(?:--?)?[A-Za-z0-9_.-]*?(?:token|secret|passw(?:or)?d|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|credential|auth)[A-Za-z0-9_-]*)"
    r"(?P<sep>\"?\s*[=:]\s*\"?|\s+)(?P<value>[^\s\"',;&]+)",
    re.IGNORECASE,
)
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<cred>[^/\s:@]+(?::[^/\s@]*)?)@", re.I
)
_HOST_IP = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")


def _named(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    if (
        name.upper() in NOT_SECRET_NAMES
        or value == REDACTED
        or value.lower() in {"true", "false", "none", "null"}
    ):
        return match.group(0)
    return f"{name}{match.group('sep')}{REDACTED}"


def redact_text(text: str, *, home: str | None = None, hosts: bool = False) -> str:
    """Strip secrets from free text (logs, command lines, tracebacks)."""
    if not text:
        return text
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _NAMED_VALUE.sub(_named, text)
    text = redact_home(text, home)
    if hosts:
        text = _HOST_IP.sub("<ip>", text)
    return text


def redact_home(text: str, home: str | None = None) -> str:
    home = home if home is not None else os.path.expanduser("~")
    if home and home not in ("/", "~") and len(home) > 1:
        text = re.sub(re.escape(home.rstrip("/\\")) + r"(?=[/\\]|$|\b)", "~", text)
    return text
