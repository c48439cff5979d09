"""The ONLY place for version-gated TRL / transformers workarounds.

Each entry says which versions it applies to and when it can go. Everything else in
shop_r1 uses TRL through its public extension points (configs, reward functions,
callbacks, dataset columns).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
import warnings
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any


def _version(dist: str) -> Any:
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        return Version(version(dist))
    except PackageNotFoundError:
        return None


@dataclass(frozen=True)
class PrivatePatch:
    """A patch of a private method, with the versions and the code it was verified on.

    Applied only inside `verified` (a packaging specifier of `dist`) and only when the
    target still takes the recorded parameters; tests/shop_r1/test_compat_gates.py
    fails when the installed method's signature or source differs from the fingerprint,
    i.e. when an upgrade needs the patch re-verified (then widen `verified` and update
    the fingerprint, or drop the patch)."""

    dist: str
    verified: str  # e.g. ">=1.16,<1.17"
    owner: str  # module:Class
    method: str
    params: tuple[str, ...]  # the leading parameters the patch relies on
    source_sha256: str  # of inspect.getsource(method) where verified

    def target(self) -> Any:
        import importlib

        module, _, cls = self.owner.partition(":")
        return getattr(importlib.import_module(module), cls)

    def fingerprint(self) -> tuple[tuple[str, ...], str]:
        """(leading parameters, source sha256) of the installed method."""
        method = getattr(self.target(), self.method)
        names = tuple(inspect.signature(method).parameters)[: len(self.params)]
        return names, hashlib.sha256(inspect.getsource(method).encode()).hexdigest()

    def why_not(self) -> str | None:
        """None when the patch may be applied; else why not, in words."""
        from packaging.specifiers import SpecifierSet

        have = _version(self.dist)
        if have is None or have not in SpecifierSet(self.verified):
            return f"{self.dist} {have} is outside {self.verified}, where it was verified"
        if not hasattr(self.target(), self.method):
            return f"{self.owner}.{self.method} no longer exists"
        names, _ = self.fingerprint()
        if names != self.params:
            return f"{self.owner}.{self.method} now takes {names}, not {self.params}"
        return None


PADDED_LOGPS = PrivatePatch(
    dist="trl",
    verified=">=1.16,<1.17",
    owner="trl.trainer.grpo_trainer:GRPOTrainer",
    method="_get_per_token_logps_and_entropies",
    params=("self", "model", "input_ids", "attention_mask", "logits_to_keep"),
    source_sha256="ea73c3909275851d0cd664b1e7694905fdcd9c285e848ae923d7402234f2edce",
)


def trl_has_fused_lm_head() -> bool:
    """TRL >= 1.16 (seen in 1.16.0) scores SFT and GRPO tokens through a chunked, fused
    LM head (`trl.trainer.utils.add_fused_lm_head`): the full logits never exist, so
    the memory model drops the ~13 B x tokens x vocab term. Feature-detected, because
    the release that introduced it is not recorded here; keep until TRL < 1.16 is
    dropped from `pyproject.toml`."""
    try:
        from trl.trainer import utils
    except ImportError:
        return False
    return hasattr(utils, "add_fused_lm_head")


def warmup_kwargs(ratio: float) -> dict[str, Any]:
    """transformers 5 removed `warmup_ratio`; a float `warmup_steps` < 1 is a ratio there.
    Remove the < 5 branch when transformers < 5 is dropped."""
    tf = _version("transformers")
    if tf is not None and tf.major >= 5:
        return {"warmup_steps": ratio}
    return {"warmup_ratio": ratio}


def dtype_kwarg(dtype: Any) -> dict[str, Any]:
    """`from_pretrained(dtype=...)` since transformers 4.56; `torch_dtype=` before.
    Remove when transformers < 4.56 is dropped."""
    tf = _version("transformers")
    if tf is not None and tf.release < (4, 56):
        return {"torch_dtype": dtype}
    return {"dtype": dtype}


def checkpointing_kwargs(enabled: bool) -> dict[str, Any]:
    """transformers 5.2x renamed `gradient_checkpointing` to `activation_checkpointing`
    (the old name warns, and TRL's own default of True for the old name is ignored once
    the new one is set). Remove the fallback when transformers < that release is dropped."""
    from transformers import TrainingArguments

    if "activation_checkpointing" in TrainingArguments.__dataclass_fields__:
        return {"activation_checkpointing": enabled, "gradient_checkpointing": None}
    return {"gradient_checkpointing": enabled}


class _DropMessage:
    """A logging filter that drops records whose message contains `text`."""

    def __init__(self, text: str) -> None:
        self.text = text

    def filter(self, record: Any) -> bool:
        return self.text not in record.getMessage()


BIN_WARNING = _DropMessage("annihilate the benefits of padding-free")


def quiet_single_bin_warning() -> None:
    """TRL 1.16 (seen in 1.16.0) logs that per_device_train_batch_size 1 'annihilates the
    benefits of padding-free training' whenever it does not pack itself. With token-budget
    bins (`train_sft.pack_bins`) each micro batch of 1 is one bin of many rows, so the
    warning is wrong there; it is dropped from TRL's SFT logger (idempotent). Remove when
    TRL's check counts tokens or knows pre-packed rows."""
    import logging

    logger = logging.getLogger("trl.trainer.sft_trainer")
    if BIN_WARNING not in logger.filters:
        logger.addFilter(BIN_WARNING)


def liger_kwargs(enabled: bool) -> dict[str, Any]:
    """`use_liger_kernel` of TrainingArguments. TRL >= 1.16 applies only Liger's layer
    kernels with it (it keeps its own fused LM head) and warns that the flag goes in TRL
    2.0 in favour of Hub kernels, which need a download; offline machines cannot use
    those, so the warning is silenced here. Replace when TRL 2.0 is supported."""
    if not enabled:
        return {}
    import warnings

    from transformers import TrainingArguments

    if "use_liger_kernel" not in TrainingArguments.__dataclass_fields__:
        return {}
    warnings.filterwarnings(
        "ignore", message=r"`use_liger_kernel=True` is deprecated", category=FutureWarning
    )
    pin_liger_triton()
    return {"use_liger_kernel": True}


def pin_liger_triton(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Keep Liger's RoPE, RMSNorm and SwiGLU on its Triton kernels. Liger 0.8.5's
    dispatcher takes its CuTe DSL kernels whenever `cutlass.cute` imports (vLLM brings
    nvidia-cutlass-dsl); on packed rows its RoPE cost 2.1 s of host time per step and SFT
    ran 3.9x slower at the 1.5B shape on an H100 (the doctor's LIGER_CUTEDSL_AUTOSELECTED).
    The per-op variables are Liger's own switch, read at each dispatch; a choice already
    in the environment is kept. Returns what was set."""
    import os
    from importlib import metadata

    from shop_r1_doctor.api import liger_triton_pins

    env = os.environ if environ is None else environ
    try:
        version: str | None = metadata.version("liger-kernel")
    except metadata.PackageNotFoundError:
        version = None
    pins = liger_triton_pins(version, env)
    env.update(pins)
    if pins:
        print(
            "shop-r1: Liger kernels kept on Triton ("
            + " ".join(f"{k}={v}" for k, v in pins.items())
            + "): its CuTe DSL kernels are slow on packed rows (LIGER_CUTEDSL_AUTOSELECTED)",
            file=sys.stderr,
        )
    return pins


def guard_padded_logps(trainer: Any) -> bool:
    """TRL 1.16 (seen in 1.16.0) computes GRPO's KL term `exp(ref - logp) - ...` at every
    completion position and applies the completion mask afterwards. At padding both
    log-probs are unconstrained: once they differ by more than ~88 the exp is inf, and
    `inf x 0` is NaN in the loss and in its gradient, and the optimizer then writes NaN
    weights (the next `generate()` dies with "probability tensor contains either `inf`,
    `nan` or element < 0"). Reproduced on the CPU with TRL's own `_compute_loss`
    (tests/shop_r1/test_train_grpo_padding.py); the H100 runs that died that way had
    another cause, SDPA's backward (`guard_sdpa_padded_rows`). Policy, old and reference
    log-probs all come from `_get_per_token_logps_and_entropies`; setting them to 0 at
    padded completion positions (`torch.where`: an exact 0 gradient there) makes every
    ratio and the KL neutral at padding and leaves real tokens unchanged. Applied to one
    trainer instance; remove when TRL masks before the exp.

    Gated (`PADDED_LOGPS`): outside the TRL versions it was verified on, or when the
    method's parameters changed, it is not applied and a warning says why (the
    NonFiniteGradGuard callback still drops NaN-gradient updates). Returns whether it
    was applied."""
    import torch

    why_not = PADDED_LOGPS.why_not()
    if why_not is not None:
        warnings.warn(
            f"shop-r1: GRPO padded-logps guard not applied: {why_not}; NaN-gradient "
            "updates are still dropped (NonFiniteGradGuard)",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    inner = trainer._get_per_token_logps_and_entropies

    def guarded(
        model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, *a: Any, **kw: Any
    ) -> Any:
        logps, *rest = inner(model, input_ids, attention_mask, logits_to_keep, *a, **kw)
        keep = attention_mask[:, -logits_to_keep:].bool()
        return (torch.where(keep, logps, torch.zeros_like(logps)), *rest)

    trainer._get_per_token_logps_and_entropies = guarded
    return True


def trim_left_padding(trainer: Any) -> bool:
    """Score each chunk of a GRPO batch without the padding columns none of its rows uses.

    TRL 1.16 (seen in 1.16.0) left-pads every prompt of a rollout to the rollout's
    longest and runs `_get_per_token_logps_and_entropies` over chunks of the micro batch
    size at that full width: the reference and old-policy passes score each chunk of
    rows that share one prompt, and the training pass a shuffled micro batch, at the
    longest prompt's length. Cutting a chunk's leading all-padding columns removes work
    only: padding is masked from every real token, and the real tokens' positions all
    shift by the same amount, which leaves RoPE's query-key products unchanged (equal
    log-probs up to rounding: tests/shop_r1/test_grpo_trim_padding.py). The scored
    completion columns are never cut.

    Text-only: a chunk with image inputs or an MoE auxiliary loss goes to TRL unchanged.
    Gated like `guard_padded_logps` (`PADDED_LOGPS`); returns whether it was applied."""
    import torch

    why_not = PADDED_LOGPS.why_not()
    if why_not is not None:
        warnings.warn(
            f"shop-r1: GRPO padding trim not applied: {why_not}", RuntimeWarning, stacklevel=2
        )
        return False
    inner = trainer._get_per_token_logps_and_entropies

    def trimmed(
        model: Any,
        input_ids: Any,
        attention_mask: Any,
        logits_to_keep: int,
        batch_size: int | None = None,
        compute_entropy: bool = False,
        compute_aux_loss: bool = False,
        **kw: Any,
    ) -> Any:
        if compute_aux_loss or any(v is not None for v in kw.values()):
            return inner(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                compute_aux_loss=compute_aux_loss,
                **kw,
            )
        rows, width = input_ids.shape
        size = batch_size or rows
        starts = range(0, rows, size)
        used = torch.stack([attention_mask[a : a + size].any(dim=0) for a in starts])
        # first used column of each chunk (none used: all of it is padding), read in one
        # transfer; never into the scored tail or the column that predicts its first token
        first_used = torch.where(used.any(dim=1), used.int().argmax(dim=1), width)
        firsts = first_used.clamp(min=0, max=max(width - logits_to_keep - 1, 0)).tolist()
        logps, entropies = [], []
        for a, first in zip(starts, firsts, strict=True):
            lp, ent, _ = inner(
                model,
                input_ids[a : a + size, first:],
                attention_mask[a : a + size, first:],
                logits_to_keep,
                compute_entropy=compute_entropy,
            )
            logps.append(lp)
            entropies.append(ent)
        return (
            torch.cat(logps, dim=0),
            torch.cat(entropies, dim=0) if compute_entropy else None,
            None,
        )

    trainer._get_per_token_logps_and_entropies = trimmed
    return True


def guard_sdpa_padded_rows() -> None:
    """Keep SDPA's backward finite for left-padded batches.

    GRPO left-pads prompts. The query rows at the padding then attend to nothing (causal
    mask AND padding mask is all False). transformers >= 5 no longer patches such rows
    for torch >= 2.5 (its `allow_torch_fix` is a no-op), and torch's forward returns 0
    there, but the memory-efficient CUDA kernel's backward can still give NaN for them:
    their log-sum-exp is -inf (pytorch/pytorch#178251, #119320). Seen on an H100 with
    torch 2.11: every forward finite, then layer 7's dQ NaN with 610 columns of left
    padding (the first NaN gradient, located by hooks), after which the optimizer wrote
    NaN into every weight. Letting a fully masked row attend to every key gives it a
    finite log-sum-exp; its output is unused (no real query attends to a padded key, and
    the loss masks padding), so real positions and their gradients are unchanged.
    Registered through transformers' public `AttentionMaskInterface`, for the whole
    process; idempotent. Remove once torch's kernel handles fully masked rows."""
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    current = ALL_MASK_ATTENTION_FUNCTIONS["sdpa"]
    if getattr(current, "shop_r1_guard", False):
        return

    def sdpa_mask_no_empty_rows(*args: Any, **kwargs: Any) -> Any:
        mask = current(*args, **kwargs)
        if mask is None or mask.dtype.is_floating_point:
            return mask  # None: is_causal path, no padding; float masks: not ours to edit
        return mask | mask.logical_not().all(dim=-1, keepdim=True)

    sdpa_mask_no_empty_rows.shop_r1_guard = True  # type: ignore[attr-defined]
    AttentionMaskInterface.register("sdpa", sdpa_mask_no_empty_rows)
