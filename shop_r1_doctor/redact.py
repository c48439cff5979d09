"""Redaction applied before anything is written or printed.

Reports get pasted into public issues. Tokens, secret-looking env values and
credentials in URLs are replaced; the home directory becomes `~`. Version strings,
commit hashes and ordinary paths are kept: they are what a maintainer needs.

Layers, applied in this order by `redact_text` (each one idempotent):
1. shapes that are secret wherever they appear (PEM private keys, provider tokens, JWT);
2. `Authorization:` headers and `Bearer X`;
3. credentials inside URLs (`https://user:pass@host`, `https://TOKEN@host`);
4. values named by a secret-looking name (`--api-key X`, `token=X`, `"password": "X"`);
5. a value right after a secret word (`API key: X`, `token X`, `login X`), whatever its
   shape, once it is not a plain word (`the token is invalid` stays);
6. long hex/base64 runs on a line that mentions key/token/secret/wandb words.
   Layer 6 keeps a hash in its own context: the nearest context word before it is
   `commit`, `sha`, `revision`, `git`, ... or it follows `@` (`verl@<commit>`);
7. the home directory (`~`) and other users' names inside home paths (`<user>`);
8. with `hosts=True`: IP addresses and this machine's hostname.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping

REDACTED = "<redacted>"

# Words whose presence anywhere in a name makes its value secret.
_SECRET_ANYWHERE = ("secret", "password", "passwd", "passphrase", "credential")
# Words that make a name secret when they are its last word (`HF_TOKEN`, `hub_token`),
# not when something follows (`HF_TOKEN_PATH` is a path, `token_ids` are numbers).
_SECRET_LAST = ("token", "apikey", "auth", "cookie", "pat", "webhook", "dsn", "sig", "signature")
# `KEY` is secret after one of these (`api_key`, `AccountKey`), or in an all-caps env name.
_KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "session", "signing", "encryption", "master"}
    | {"client", "account", "license", "service", "ssh", "gpg", "wandb", "openai"}
    | {"anthropic", "shared", "subscription", "storage"}
)
# A `*_token` name that is tokenizer vocabulary, not a credential.
_TOKENIZER_ROLES = frozenset(
    {"pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "additional", "start"}
    | {"end", "stop", "image", "video", "audio", "vision", "think", "chat", "first", "last"}
    | {"next", "new", "max", "min", "num"}
)
# Names that match the rules above but hold no secret.
NOT_SECRET_NAMES = frozenset(
    {"TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_IMPLICIT_TOKEN", "HF_HUB_DISABLE_TELEMETRY"}
)


def _words(name: str) -> list[str]:
    """`hubToken` -> ['hub', 'token']; `WANDB_API_KEY` -> ['wandb', 'api', 'key']."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_name(name: str) -> bool:
    """True when a variable/option/key called `name` holds a secret value."""
    bare = name.lstrip("-$")
    if bare.upper() in NOT_SECRET_NAMES:
        return False
    words = _words(bare)
    if not words:
        return False
    if any(s in w for w in words for s in _SECRET_ANYWHERE):
        return True
    last, before = words[-1], (words[-2] if len(words) > 1 else "")
    if last.endswith("token"):
        return not (last == "token" and before in _TOKENIZER_ROLES)
    if last in _SECRET_LAST or last.endswith("apikey"):
        return True
    if last == "key":
        return before in _KEY_QUALIFIERS or (bare.isupper() and len(words) > 1)
    return False


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Secret-looking names get `<redacted>`; every other value is text-redacted."""
    return {k: (REDACTED if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


# 1. Shapes that are secret wherever they appear. Each is specific enough that a version
# string, a path or a commit hash cannot take it.
_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END \1-----|.*\Z)",  # a log tail may cut the block: redact to the end
    re.S,
)
_TOKEN_SHAPES = [
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face user token
    r"\bapi_org_[A-Za-z0-9]{30,}",  # Hugging Face org token
    r"\bsk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",  # AWS key id
    r"\bAIza[0-9A-Za-z_-]{35}",  # Google API key
    r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
    r"\bxox[abposre]-[A-Za-z0-9-]{10,}",  # Slack
    r"\bxapp-\d-[A-Za-z0-9-]{10,}",
    r"hooks\.slack\.com/services/[A-Za-z0-9/]+",
    r"\bnpm_[A-Za-z0-9]{30,}",  # npm
    r"\bpypi-[A-Za-z0-9_-]{50,}",  # PyPI
    r"\bgsk_[A-Za-z0-9]{40,}",  # Groq
    r"\br8_[A-Za-z0-9]{30,}",  # Replicate
    r"\btvly-[A-Za-z0-9_-]{20,}",  # Tavily
    r"\blocal-[0-9a-f]{40}\b",  # wandb local server key
    r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b",  # Telegram bot
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
]
_TOKENS = re.compile("|".join(f"(?:{p})" for p in _TOKEN_SHAPES))

# 2. `Authorization: Bearer X`, `Proxy-Authorization: Basic X`, a bare `Bearer X`.
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:Proxy-)?Authorization[\"']?\s*[:=]\s*[\"']?(?:(?:Bearer|Basic|Token|Digest)\s+)?)"
    r"(?P<value>[^\s\"',]+)",
    re.I,
)
_BEARER = re.compile(r"(?P<head>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})")

# 3. `scheme://user:pass@` -> `scheme://user:<redacted>@`; `scheme://TOKEN@` when token-long.
_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^/\s:@\"'<>]*)(?::(?P<pw>[^/\s@\"'<>]*))?@",
    re.I,
)

# 4. A secret-looking name and its value. `=`/`:` separate anywhere; a space separates
# only after an option (`--api-key X`), so prose ("the token is invalid") is left alone.
# The name must contain a hint word, so ordinary `a=b` text is never consumed.
_HINT = r"(?:token|secret|passw|passphrase|credential|key|auth|cookie|pat|webhook|dsn|sig)"
# A value is quoted (also `\'x\'` inside a repr) or runs to a delimiter; it is never
# the next `name =` (`credentials: api_key = X`) and never ends in `:`/`=`.
_DELIM = r"\s\"'`,;&()<>{}\[\]\\"
_VALUE = (
    r"(?P<value>\\?\"[^\"\n]*?\\?\"|\\?'[^'\n]*?\\?'"
    rf"|[^{_DELIM}]+(?<![:=])(?![^{_DELIM}]))"
    r"(?![ \t]*[=:])"
)
_NAMED_VALUE = re.compile(
    rf"(?P<name>(?<![\w.-])-{{0,2}}(?=[A-Za-z_])[\w.-]*?{_HINT}[\w.-]*)"
    rf"(?P<sep>[\"']?[ \t]*[=:][ \t]*){_VALUE}",
    re.I,
)
_OPTION_VALUE = re.compile(
    rf"(?P<name>(?<![\w.-])--?(?=[A-Za-z])[\w.-]*?{_HINT}[\w.-]*)(?P<sep>[ \t]+)(?=[^\s-]){_VALUE}",
    re.I,
)
_SAFE_VALUE = re.compile(
    r"(?:true|false|none|null|nil|yes|no|on|off|\d{1,6}|\*+|<[^<>]*>|\$\{?\w+\}?|%\w+%"
    r"|(?:self|os|kwargs|args|cfg|config|settings|env)\.[\w.]*)",
    re.I,
)

# 5. Long hex / base64 runs on a line that talks about keys or tokens.
_LONG_RUN = re.compile(
    r"(?<![\w+/=.-])(?:[0-9a-fA-F]{32,}|[A-Za-z0-9+/_-]{32,}={0,2})(?![\w+/=.-])"
)
_KEY_WORD = re.compile(
    r"(?<![A-Za-z])(?:api[ _-]?keys?|keys?|tokens?|secrets?|passwords?|passwd|"
    r"credentials?|wandb|bearer|auth|login)(?![a-z])",
    re.I,
)

# 5. A value right after a secret word. Only a word boundary on both sides: `pad_token`,
# `Tokens per second`, `KeyError` and `tokenizer` are other things.
_SECRET_WORD = (
    r"(?:api[ _-]?key|access[ _-]?key|key|token|secret|password|passwd|auth|bearer|login)"
)
_AFTER_WORD = re.compile(
    rf"(?P<head>(?<![\w-]){_SECRET_WORD}(?![\w-])(?:[ \t]+(?:is|was|are))?[\"']?[ \t]*[:=]?[ \t]*)"
    r"(?![:=])(?P<value>\\?[\"'`]?[^\s\"'`,;()<>{}\[\]]+[\"'`]?)",
    re.I,
)
# A plain word, a number or version, a path or URL, an identifier in snake_case, an
# option: none of them is a credential (`token is invalid`, `key 2`, `auth login`).
_PLAIN_VALUE = re.compile(
    r"(?:[A-Za-z]+|[\d.]+|[\w.+-]*[/\\][^\s]*|[a-z][a-z0-9]*(?:_[a-z0-9]+)+|-.*|\$.*|<.*)"
)
# Words that say what a hex/base64 run is when they come closer before it than any secret
# word does: a commit, a content hash, a git object.
_HASH_WORD = re.compile(
    r"(?<![A-Za-z])(?:commit|sha(?:1|256|512)?|revision|rev|git|hash|digest|checkout|tree|blob)(?![a-z])",
    re.I,
)

# 7. Home directories of any user, on Linux, macOS, Windows, Git Bash and WSL.
_USER_HOME = re.compile(
    r"(?P<base>/home/|/Users/|[A-Za-z]:[\\/]+Users[\\/]+|/[a-z]/Users/|/mnt/[a-z]/Users/)"
    r"(?P<user>[^\\/\s\"'<>:]+)",
    re.I,
)
_SHARED_HOMES = frozenset({"public", "default", "all users", "shared", "<user>"})

# 8. IPv4 (loopback and the bind-all address stay: they explain connection failures).
_IPV4 = re.compile(r"(?<![\w.<>~!+-])(?:\d{1,3}\.){3}\d{1,3}(?![\w.+]|\.\d)")
_KEEP_IPS = frozenset({"0.0.0.0", "255.255.255.255"})


def _redact_named(match: re.Match[str]) -> str:
    name, value = match.group("name"), match.group("value")
    quoted = re.fullmatch(r"(\\?[\"']?)(.*?)(\\?[\"']?)", value, re.S)
    assert quoted is not None  # the pattern matches any string
    opening, bare_value, closing = quoted.groups()
    if (
        not is_secret_name(name)
        or not bare_value
        or REDACTED in bare_value
        or _SAFE_VALUE.fullmatch(bare_value)
        or bare_value.lower().lstrip("-") == name.lower().lstrip("-")  # `token=token`
        or match.string[match.end() : match.end() + 1] == "("  # `token=get_token()`
    ):
        return match.group(0)
    return f"{name}{match.group('sep')}{opening}{REDACTED}{closing}"


def _redact_userinfo(match: re.Match[str]) -> str:
    scheme, user, pw = match.group("scheme"), match.group("user"), match.group("pw")
    if pw is not None:
        return f"{scheme}{user}:{REDACTED}@" if pw and pw != REDACTED else match.group(0)
    # A user name alone (`ssh://git@`) is no secret; a token-long one (`https://TOKEN@`) is.
    return f"{scheme}{REDACTED}@" if len(user) >= 16 and user != REDACTED else match.group(0)


def _looks_random(run: str) -> bool:
    if re.fullmatch(r"[0-9a-fA-F]+", run):
        return True
    classes = sum(bool(re.search(c, run)) for c in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes == 3 and "//" not in run


def _in_hash_context(text: str, start: int) -> bool:
    """Is the value at `start` a hash by its context: `@` before it, or a hash word nearer
    before it (within 60 characters) than any secret word?"""
    if text[max(0, start - 1) : start] == "@":
        return True
    window = text[max(0, start - 60) : start]
    hashes = [m.end() for m in _HASH_WORD.finditer(window)]
    secrets = [m.end() for m in _KEY_WORD.finditer(window)]  # `login` is one of them
    return bool(hashes) and (not secrets or max(hashes) > max(secrets))


def _redact_after_word(match: re.Match[str]) -> str:
    value = match.group("value")
    bare = value.strip("\\\"'`").rstrip(".:!?")  # prose punctuation ends a word
    if (
        not bare or REDACTED in bare or _PLAIN_VALUE.fullmatch(bare) or _SAFE_VALUE.fullmatch(bare)
    ):  # no hash-context test here: the secret word itself is always the nearest word
        return match.group(0)
    opening = value[: len(value) - len(value.lstrip("\\\"'`"))]
    closing = value[len(value.rstrip("\"'`")) :]
    return f"{match.group('head')}{opening}{REDACTED}{closing}"


def _redact_long_runs(text: str) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        if _KEY_WORD.search(line) and _LONG_RUN.search(line):
            line = _LONG_RUN.sub(
                lambda m: (
                    REDACTED
                    if _near_key_word(m)
                    and _looks_random(m.group(0))
                    and not _in_hash_context(m.string, m.start())
                    else m[0]
                ),
                line,
            )
        out.append(line)
    return "".join(out)


def _near_key_word(match: re.Match[str]) -> bool:
    line = match.string
    window = line[max(0, match.start() - 60) : match.start()] + " " + line[match.end() :][:30]
    return bool(_KEY_WORD.search(window))


def redact_text(text: str, home: str | None = None, hosts: bool = False) -> str:
    """Strip secrets from free text (logs, command lines, tracebacks, env values)."""
    if not text:
        return text
    text = _PEM.sub(REDACTED, text)
    text = _TOKENS.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(_keep_head, text)
    text = _BEARER.sub(_keep_head, text)
    text = _URL_USERINFO.sub(_redact_userinfo, text)
    # Before layer 4: `credentials: password was X` must not lose its `password` word first.
    text = _AFTER_WORD.sub(_redact_after_word, text)
    text = _NAMED_VALUE.sub(_redact_named, text)
    text = _OPTION_VALUE.sub(_redact_named, text)
    text = _redact_long_runs(text)
    text = redact_home(text, home)
    if hosts:
        text = redact_hosts(text)
    return text


def _keep_head(match: re.Match[str]) -> str:
    value = match.group("value")
    if value == REDACTED or value.startswith("<") or _SAFE_VALUE.fullmatch(value):
        return match.group(0)
    return f"{match.group('head')}{REDACTED}"


def redact_home(text: str, home: str | None = None) -> str:
    """This user's home -> `~`; another user's name inside a home path -> `<user>`."""
    home = home if home is not None else os.path.expanduser("~")
    home = home.rstrip("/\\")
    if home and home not in ("~",) and len(home) > 1:
        text = re.sub(re.escape(home) + r"(?![\w.-])", "~", text)
    return _USER_HOME.sub(
        lambda m: (
            m.group(0) if m.group("user").lower() in _SHARED_HOMES else f"{m.group('base')}<user>"
        ),
        text,
    )


def redact_hosts(text: str, hostname: str | None = None) -> str:
    """IP addresses -> `<ip>` (loopback and 0.0.0.0 kept); this machine's name -> `<host>`."""
    text = _IPV4.sub(lambda m: "<ip>" if _is_private_ip(m) else m.group(0), text)
    names = {hostname} if hostname else _local_hostnames()
    for name in sorted(filter(None, names), key=len, reverse=True):
        if name.lower() not in ("localhost", "localhost.localdomain") and len(name) > 2:
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", "<host>", text, flags=re.I)
    return re.sub(r"\bip-\d+-\d+-\d+-\d+(?:\.[\w-]+)*", "<host>", text)


def _is_private_ip(match: re.Match[str]) -> bool:
    """An address worth hiding: not loopback/bind-all, and not a 4-part version number."""
    ip = match.group(0)
    if ip in _KEEP_IPS or ip.startswith("127.") or not _is_ipv4(ip):
        return False
    before = match.string[max(0, match.start() - 24) : match.start()]
    after = match.string[match.end() : match.end() + 10]
    # `opencv-python-headless 4.12.0.88 requires numpy`, `version 4.11.0.86`
    return not (
        re.search(r"(?:version|==|>=|<=|~=|!=|[A-Za-z]-[A-Za-z]+)\s*$", before, re.I)
        or after.startswith(" requires")
    )


def _is_ipv4(text: str) -> bool:
    return all(int(part) <= 255 for part in text.split("."))


def _local_hostnames() -> set[str]:
    try:
        full = socket.gethostname()
    except OSError:
        return set()
    return {full, full.split(".", 1)[0]}
