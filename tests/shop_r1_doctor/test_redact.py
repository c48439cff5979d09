"""Redaction: every planted secret disappears, every ordinary fact survives."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop_r1_doctor import redact
from shop_r1_doctor.redact import (
    REDACTED,
    is_secret_name,
    redact_env,
    redact_home,
    redact_hosts,
    redact_text,
)
from tests.secret_corpus import BARE, CASES, ENV_CASES, SECRETS, SEPARATED, SURVIVORS


def test_corpus_size_is_what_the_report_claims():
    # Quoted in docs/report.md and the closing note: keep them in step.
    assert len(SECRETS) == 42
    assert len(CASES) + len(ENV_CASES) == 91
    assert len(BARE) == 22
    assert len(SEPARATED) == 12
    assert len(SURVIVORS) == 41


@pytest.mark.parametrize(
    ("secret", "text"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)]
)
def test_planted_secret_is_removed_from_text(secret, text):
    out = redact_text(text)
    assert SECRETS[secret] not in out
    assert REDACTED in out


@pytest.mark.parametrize(("secret", "name", "value"), ENV_CASES, ids=[c[1] for c in ENV_CASES])
def test_planted_secret_is_removed_from_env(secret, name, value):
    out = redact_env({name: value, "CUDA_VISIBLE_DEVICES": "0"})
    assert SECRETS[secret] not in out[name]
    assert out["CUDA_VISIBLE_DEVICES"] == "0"


def test_all_secrets_in_one_document_are_removed():
    doc = "\n".join(text for _, text in CASES)
    out = redact_text(doc)
    assert [name for name, value in SECRETS.items() if value in out] == []


@pytest.mark.parametrize("text", SURVIVORS)
def test_ordinary_facts_survive(text):
    assert redact_text(text, home="/home/nobody-here") == text


def test_survivors_also_survive_host_redaction_except_private_addresses():
    for text in SURVIVORS:
        assert redact_text(text, home="/nonexistent", hosts=True) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("hub_token", True),
        ("--hf_token", True),
        ("WANDB_API_KEY", True),
        ("apiKey", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("GH_PAT", True),
        ("SSH_KEY", True),
        ("AccountKey", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("HF_HUB_DISABLE_IMPLICIT_TOKEN", False),
        ("HF_TOKEN_PATH", False),
        ("pad_token", False),
        ("max_new_tokens", False),
        ("token_ids", False),
        ("sort_key", False),
        ("KeyError", False),
        ("Authorization", False),  # its value is handled by the header rule
        ("path", False),
        ("PWD", False),
    ],
)
def test_is_secret_name(name, secret):
    assert is_secret_name(name) is secret


def test_home_becomes_tilde_and_other_users_become_placeholder():
    text = "/home/alice/proj /home/alice2/x C:\\Users\\bob\\AppData /mnt/c/Users/carol/y"
    out = redact_home(text, "/home/alice")
    assert out == "~/proj /home/<user>/x C:\\Users\\<user>\\AppData /mnt/c/Users/<user>/y"
    assert redact_home("C:/Users/Public/x", "/root") == "C:/Users/Public/x"


def test_hosts_are_redacted_only_when_asked():
    text = "MASTER_ADDR=10.1.2.3 host gpu-node-7 bound 0.0.0.0, client 127.0.0.1 ip-10-0-0-5.ec2.internal"
    assert redact_text(text, home="/x") == text
    out = redact_hosts(text, hostname="gpu-node-7")
    assert out == "MASTER_ADDR=<ip> host <host> bound 0.0.0.0, client 127.0.0.1 <host>"


@given(st.text(max_size=200))
def test_redaction_is_idempotent(text):
    once = redact_text(text, home="/home/u")
    assert redact_text(once, home="/home/u") == once


@given(st.sampled_from([t for _, t in CASES]), st.text(max_size=40), st.text(max_size=40))
def test_secret_is_removed_whatever_surrounds_it(text, before, after):
    # Surrounding junk must not glue onto a secret and hide it from the patterns.
    out = redact_text(before + "\n" + text + "\n" + after, home="/home/u")
    for value in SECRETS.values():
        if value in text:
            assert value not in out


# --- every rule is needed: delete one, and some planted row must leak -------------------

NEVER = re.compile(r"(?!x)x")


def _leaks() -> list[str]:
    """Planted rows whose secret survives, and survivors that changed."""
    rows = [(n, t) for n, t in CASES] + BARE
    out = [t for n, t in rows if SECRETS[n] in redact.redact_text(t, home="/home/u")]
    out += [name for n, name, v in ENV_CASES if SECRETS[n] in redact.redact_env({name: v})[name]]
    out += [t for t in SURVIVORS if redact.redact_text(t, home="/home/nobody-here") != t]
    return out


def test_with_every_rule_nothing_leaks():
    assert _leaks() == []


@pytest.mark.parametrize("shape", redact._TOKEN_SHAPES)
def test_each_token_shape_has_a_bare_row_only_it_catches(monkeypatch, shape):
    others = [p for p in redact._TOKEN_SHAPES if p != shape]
    monkeypatch.setattr(redact, "_TOKENS", re.compile("|".join(f"(?:{p})" for p in others)))
    leaked = [t for n, t in BARE if SECRETS[n] in redact.redact_text(t, home="/home/u")]
    assert leaked, f"deleting {shape!r} leaks no bare-prose row: the corpus cannot see it"


@pytest.mark.parametrize(("name", "value"), SEPARATED.items(), ids=list(SEPARATED))
def test_a_token_with_underscores_and_dashes_is_redacted_whole(name, value):
    assert redact_text(f"sent {value} along", home="/home/u") == f"sent {REDACTED} along"


@pytest.mark.parametrize("shape", [p for p in redact._TOKEN_SHAPES if re.search(r"[_-]\]", p)])
def test_each_shape_that_allows_underscores_or_dashes_has_a_row_that_needs_them(monkeypatch, shape):
    narrowed = shape.replace("_-]", "]").replace("_]", "]").replace("-]", "]")
    shapes = [narrowed if p == shape else p for p in redact._TOKEN_SHAPES]
    monkeypatch.setattr(redact, "_TOKENS", re.compile("|".join(f"(?:{p})" for p in shapes)))
    cut = [
        n
        for n, v in SEPARATED.items()
        if redact.redact_text(f"sent {v} along") != f"sent {REDACTED} along"
    ]
    assert cut, f"{shape!r} without `_`/`-` still redacts every SEPARATED row whole"


# The other layers and guards, each replaced by a no-op (patterns that never match,
# functions that change nothing / always say "no").
LAYERS = {
    "_PEM": NEVER,
    "_AUTH_HEADER": NEVER,
    "_BEARER": NEVER,
    "_URL_USERINFO": NEVER,
    "_NAMED_VALUE": NEVER,
    "_OPTION_VALUE": NEVER,
    "_AFTER_WORD": NEVER,
    "_redact_long_runs": lambda text: text,
    "_SAFE_VALUE": NEVER,
    "_PLAIN_VALUE": NEVER,
    "_in_hash_context": lambda text, start: False,
    "is_secret_name": lambda name: False,
}


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_is_needed(monkeypatch, layer):
    monkeypatch.setattr(redact, layer, LAYERS[layer])
    assert _leaks(), f"the corpus passes without {layer}"
