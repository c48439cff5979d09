"""Rationale self-certainty reward (paper Eq. 3), computed from the policy's own logits.

For the N completion tokens j that fall inside the rationale string, with p_j the
policy's next-token distribution over the vocabulary V at that position:

    s(r) = (1/N) * sum_j KL(p_j || U)   where U is uniform over V
         = (1/N) * sum_j [ log|V| - H(p_j) ]      (nats; H(p) = -sum_k p_k log p_k)
    reward = alpha * s(r)                         (alpha = 0.005 by default)

KL(p || U) = sum_k p_k log(p_k / (1/|V|)) = log|V| + sum_k p_k log p_k. It is 0 for a
uniform distribution and at most log|V| (about 11.9 for Qwen2.5's 151,936 entries) for a
one-hot one, so the reward lies in [0, alpha * log|V|] (about 0.06 by default).

The paper prints Eq. 3 with an extra 1/|V| factor in front of the sum over the
vocabulary. Read literally that would scale the term by ~7e-6 and make it vanish next
to the 0.5-1000 action rewards, so we take it as a notation slip and implement the
standard KL above (the "self-certainty" of Kang et al. 2025 is the same KL up to
sign convention). This is stated again in docs/task.md.

Which tokens: the completion is re-tokenised with offsets (or its generated ids are
decoded piecewise) and a token counts when its character range overlaps the
rationale's value span from `shop_r1.parser` (the text between the quotes). A
completion that does not parse earns 0 (the format gate), like every action reward.
torch is imported only inside the functions.
"""

from __future__ import annotations

import math
from typing import Any

from shop_r1.parser import parse_completion
from shop_r1.rewards import RewardConfig, completion_text


def self_certainty(logits: Any, mask: Any) -> Any:
    """Mean over masked positions of KL(p || U) = log|V| - H(p), one value per row.

    logits: [B, T, V] float tensor; mask: [B, T] (bool or 0/1). Rows with an empty
    mask get 0. Computed in float32 whatever the logits' dtype.
    """
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)  # [B, T, V]
    neg_entropy = (logp.exp() * logp).sum(dim=-1)  # [B, T] = -H(p)
    kl = math.log(logits.shape[-1]) + neg_entropy  # [B, T]
    m = mask.to(kl.dtype)
    return (kl * m).sum(dim=-1) / m.sum(dim=-1).clamp(min=1.0)


def token_mask(offsets: list[tuple[int, int]], span: tuple[int, int]) -> list[bool]:
    """Which tokens (by character offsets) overlap the character span [start, end)."""
    start, end = span
    return [a < end and b > start for a, b in offsets]


def _piece_offsets(tokenizer: Any, ids: list[int]) -> list[tuple[int, int]]:
    """Character offsets of generated token ids, by decoding growing prefixes."""
    offsets, prev = [], 0
    for k in range(1, len(ids) + 1):
        cur = len(tokenizer.decode(ids[:k], skip_special_tokens=False))
        offsets.append((prev, max(cur, prev)))
        prev = max(cur, prev)
    return offsets


class SelfCertaintyReward:
    """alpha x self-certainty of the rationale tokens, as a TRL reward function.

    The trainer binds the live policy with `bind(model, tokenizer)` (through a
    TrainerCallback, so the score always comes from the current weights). Unbound, it
    raises instead of returning 0: a silent 0 hid exactly this bug in a public
    re-implementation. Pickling drops the model and tokenizer.
    """

    def __init__(self, cfg: RewardConfig | None = None, batch_size: int = 4) -> None:
        self.cfg = cfg or RewardConfig()
        self.batch_size = batch_size
        self.model: Any = None
        self.tokenizer: Any = None
        self.__name__ = "self_certainty"

    def bind(self, model: Any, tokenizer: Any) -> SelfCertaintyReward:
        self.model, self.tokenizer = model, tokenizer
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["model"] = state["tokenizer"] = None
        return state

    def __call__(
        self,
        completions: list[Any],
        prompts: list[Any] | None = None,
        completion_ids: list[list[int]] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        if self.model is None or self.tokenizer is None:
            raise RuntimeError(
                "SelfCertaintyReward is not bound to the policy: call .bind(model, tokenizer) "
                "(the trainer does this in a TrainerCallback) or set rewards.alpha to 0"
            )
        out = [0.0] * len(completions)
        jobs = []  # (row, prompt ids, completion ids, mask)
        for row, completion in enumerate(completions):
            text = completion_text(completion)
            parsed = parse_completion(text, strict=self.cfg.strict)
            if not parsed.ok or parsed.rationale_span is None:
                continue
            ids = list(completion_ids[row]) if completion_ids is not None else None
            if ids is None:
                enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
                ids, offsets = enc["input_ids"], [tuple(o) for o in enc["offset_mapping"]]
            else:
                offsets = _piece_offsets(self.tokenizer, ids)
            mask = token_mask(offsets, parsed.rationale_span)
            if any(mask):
                prompt = prompts[row] if prompts is not None else ""
                jobs.append((row, self._prompt_ids(prompt), ids, mask))
        for i in range(0, len(jobs), self.batch_size):
            for row, value in self._score(jobs[i : i + self.batch_size]):
                out[row] = self.cfg.alpha * value
        return out

    def _prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, list):  # conversational: the model's chat template
            ids = self.tokenizer.apply_chat_template(
                prompt, add_generation_prompt=True, tokenize=True, return_dict=False
            )
            return list(ids["input_ids"] if isinstance(ids, dict) else ids)
        return list(self.tokenizer(prompt or "", add_special_tokens=False)["input_ids"])

    def _score(
        self, jobs: list[tuple[int, list[int], list[int], list[bool]]]
    ) -> list[tuple[int, float]]:
        import torch

        device = next(self.model.parameters()).device
        pad = self.tokenizer.pad_token_id or 0
        width = max(len(p) + len(c) for _, p, c, _ in jobs)
        keep = max(len(c) for _, _, c, _ in jobs) + 1
        # Left padding: every completion ends at the last position, so the model need only
        # produce logits for the last `keep` positions (a full [B, T, V] would not fit for
        # long prompts).
        ids = torch.full((len(jobs), width), pad, dtype=torch.long)
        attn = torch.zeros((len(jobs), width), dtype=torch.long)
        mask = torch.zeros((len(jobs), keep), dtype=torch.bool)
        for b, (_, p, c, m) in enumerate(jobs):
            seq = p + c
            ids[b, width - len(seq) :] = torch.tensor(seq)
            attn[b, width - len(seq) :] = 1
            # Logits at position t predict token t+1: completion token k (absolute position
            # width - len(c) + k) is predicted at width - len(c) + k - 1, i.e. at index
            # keep - len(c) + k - 1 of the kept window.
            for k, wanted in enumerate(m):
                if wanted and (len(p) + k) > 0:
                    mask[b, keep - len(c) + k - 1] = True
        positions = (attn.cumsum(dim=1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = self.model(
                input_ids=ids.to(device),
                attention_mask=attn.to(device),
                position_ids=positions.to(device),
                logits_to_keep=keep,
            ).logits[:, -keep:]
        values = self_certainty(logits, mask.to(logits.device)).tolist()
        return [(row, float(v)) for (row, *_), v in zip(jobs, values, strict=True)]
