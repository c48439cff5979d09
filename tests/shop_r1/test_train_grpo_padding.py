"""GRPO's KL term at padded completion positions (shop_r1._compat.guard_padded_logps).

Runs TRL's own `_compute_loss` on a tiny model with crafted rollouts: a reference
log-prob far above the policy's at a PADDED position. TRL alone returns a NaN loss
and NaN gradients there; guarded, the loss and every gradient are finite and the real
tokens' loss is unchanged. (The H100 learning runs that died at one step had another
cause, SDPA's backward: see test_trainer_nan_guards.py.)
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from grpo_tiny import tiny_grpo_trainer  # noqa: E402

from shop_r1 import _compat  # noqa: E402


def _inputs(trainer, pad_gap):
    g = torch.Generator().manual_seed(0)
    completion_mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    ref = torch.full((2, 4), -5.0)
    ref[0, 3] = pad_gap  # a padded position: TRL's exp(ref - logp) overflows here
    return {
        "prompt_ids": torch.randint(0, 200, (2, 3), generator=g),
        "prompt_mask": torch.ones(2, 3, dtype=torch.long),
        "completion_ids": torch.randint(0, 200, (2, 4), generator=g),
        "completion_mask": completion_mask,
        "advantages": torch.tensor([1.0, -1.0]),
        "ref_per_token_logps": ref,
        "num_items_in_batch": completion_mask.sum(),
    }


def _loss_and_grads(trainer, inputs):
    trainer.model.zero_grad()
    loss = trainer._compute_loss(trainer.model, inputs)
    loss.backward()
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    return loss.detach(), all(torch.isfinite(gr).all() for gr in grads)


def test_trl_alone_turns_a_padded_kl_overflow_into_nan(tmp_path):
    trainer = tiny_grpo_trainer(tmp_path, beta=0.001)
    loss, finite = _loss_and_grads(trainer, _inputs(trainer, pad_gap=200.0))
    # if this starts failing, TRL masks before the exp: drop the guard (see _compat)
    assert not torch.isfinite(loss) or not finite


def test_guard_keeps_loss_and_grads_finite_and_real_tokens_unchanged(tmp_path):
    guarded = tiny_grpo_trainer(tmp_path / "a", beta=0.001)
    _compat.guard_padded_logps(guarded)
    inputs = _inputs(guarded, pad_gap=0.0)
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
    with torch.no_grad():  # TRL computes the reference log-probs through the same method
        ref, *_ = guarded._get_per_token_logps_and_entropies(guarded.ref_model, ids, mask, 4)
    assert torch.equal(ref[0, 2:], torch.zeros(2))  # padded positions are neutral
    inputs["ref_per_token_logps"] = ref
    loss, finite = _loss_and_grads(guarded, inputs)
    assert torch.isfinite(loss) and finite
    # TRL without the guard, same weights and real-token reference, a harmless value at
    # the padding: the same loss, so the guard changes nothing at real tokens
    plain = tiny_grpo_trainer(tmp_path / "b", beta=0.001)
    harmless = dict(
        inputs, ref_per_token_logps=torch.where(inputs["completion_mask"].bool(), ref, -5.0)
    )
    same, _ = _loss_and_grads(plain, harmless)
    assert torch.allclose(loss, same, atol=1e-6)
