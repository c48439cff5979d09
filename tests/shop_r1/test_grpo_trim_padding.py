"""GRPO scoring without the padding a chunk does not need (shop_r1._compat.trim_left_padding)
and the reference model in the compute dtype (shop_r1.precision.cast_reference).

Runs TRL's own `_get_per_token_logps_and_entropies` on a tiny Qwen2 (RoPE) model over a
left-padded batch whose chunks have different prompt lengths, as TRL builds them: the
trimmed scoring gives the same log-probs and entropies, and every chunk reaches the
model at its own longest row's width.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from grpo_tiny import tiny_grpo_trainer  # noqa: E402

from shop_r1 import _compat, precision  # noqa: E402
from shop_r1.autoconfig import AutoPlan  # noqa: E402


def _trainer(tmp_path, beta=0.0):
    # TRL's default bf16 autocast on the CPU rounds at ~1e-3: compare in fp32
    return tiny_grpo_trainer(tmp_path, beta=beta, bf16=False)


# prompt lengths per row (chunks of 2): chunk 0 needs 3 prompt columns, chunk 1 all 9,
# chunk 2 only 1; completions are 4 tokens, the last row's padded after 2
PROMPTS = [3, 3, 9, 5, 1, 1]
WIDTH, COMPLETION = 9, 4


def _batch():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 250, (len(PROMPTS), WIDTH + COMPLETION), generator=g)
    mask = torch.ones_like(ids)
    for row, n in enumerate(PROMPTS):
        mask[row, : WIDTH - n] = 0
        ids[row, : WIDTH - n] = 0  # the pad id: never read
    mask[-1, -2:] = 0
    return ids, mask


def _widths(model):
    seen = []
    handle = model.register_forward_pre_hook(
        lambda _m, args, kwargs: seen.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    return seen, handle


@pytest.mark.parametrize("compute_entropy", [False, True])
def test_trimmed_scoring_equals_trl_on_the_full_width(tmp_path, compute_entropy):
    trainer = _trainer(tmp_path)
    model = trainer.model
    ids, mask = _batch()
    plain = trainer._get_per_token_logps_and_entropies
    with torch.no_grad():
        ref_lp, ref_ent, _ = plain(
            model, ids, mask, COMPLETION, batch_size=2, compute_entropy=compute_entropy
        )
        assert _compat.trim_left_padding(trainer) is True
        seen, handle = _widths(model)
        lp, ent, aux = trainer._get_per_token_logps_and_entropies(
            model, ids, mask, COMPLETION, batch_size=2, compute_entropy=compute_entropy
        )
        handle.remove()
    # each chunk from its own longest prompt: 3, 9 and 1 prompt columns + the completion
    assert seen == [3 + COMPLETION, 9 + COMPLETION, 1 + COMPLETION]
    assert lp.shape == ref_lp.shape == (len(PROMPTS), COMPLETION)
    real = mask[:, -COMPLETION:].bool()
    torch.testing.assert_close(lp[real], ref_lp[real], rtol=1e-5, atol=1e-5)
    if compute_entropy:
        torch.testing.assert_close(ent[real], ref_ent[real], rtol=1e-5, atol=1e-5)
    else:
        assert ent is None
    assert aux is None


def test_trim_composes_with_the_padded_logps_guard_and_a_training_chunk(tmp_path):
    """The order `train_grpo.prepare` applies them; no batch_size = one chunk (the
    training pass's micro batch), cut to its longest row."""
    trainer = _trainer(tmp_path)
    ids, mask = _batch()
    with torch.no_grad():
        ref_lp, *_ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, 4)
        _compat.trim_left_padding(trainer)
        _compat.guard_padded_logps(trainer)
        seen, handle = _widths(trainer.model)
        lp, *_ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, 4)
        handle.remove()
    assert seen == [WIDTH + COMPLETION]  # row 2 needs every prompt column
    assert float(lp[-1, -1]) == 0.0 and float(lp[-1, -2]) == 0.0  # the guard's zeros
    real = mask[:, -COMPLETION:].bool()
    torch.testing.assert_close(lp[real], ref_lp[real], rtol=1e-5, atol=1e-5)


def test_a_chunk_of_padding_only_keeps_its_scored_columns(tmp_path):
    trainer = _trainer(tmp_path)
    ids, mask = _batch()
    mask[:2] = 0  # a chunk with no token at all: cut to the completion and the column before it
    _compat.trim_left_padding(trainer)
    seen, handle = _widths(trainer.model)
    with torch.no_grad():
        lp, *_ = trainer._get_per_token_logps_and_entropies(
            trainer.model, ids, mask, COMPLETION, batch_size=2
        )
    handle.remove()
    assert seen[0] == COMPLETION + 1
    assert lp.shape == (len(PROMPTS), COMPLETION)


def test_reference_model_takes_the_plans_dtype(tmp_path):
    trainer = _trainer(tmp_path, beta=0.001)
    assert {p.dtype for p in trainer.ref_model.parameters()} == {torch.float32}  # TRL's load
    plan = AutoPlan(dtype="bf16", master_weights="fp32", reference_dtype="bf16")
    assert precision.cast_reference(trainer, plan) is None
    assert {p.dtype for p in trainer.ref_model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}  # policy kept
    trainer.args.cast_lm_head_to_fp32 = True
    assert "cast_lm_head_to_fp32" in precision.cast_reference(
        trainer, AutoPlan(reference_dtype="fp32")
    )
    assert {p.dtype for p in trainer.ref_model.parameters()} == {torch.bfloat16}  # untouched
