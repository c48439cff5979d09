"""The stream between layers under autocast with fp32 master weights (shop_r1.precision)
and the plan's choice of it."""

import pytest
import torch
from machines import machine_snapshot

from shop_r1 import precision
from shop_r1.autoconfig import AutoPlan, decide
from shop_r1.config import GRPORunConfig, SFTRunConfig
from shop_r1.tiny import model_from_config_dict, tiny_config_dict
from shop_r1_doctor.memory import KNOWN_SHAPES, estimate_training_memory


def _layer_input_dtypes(model, ids, *, autocast):
    seen = []
    hooks = [
        layer.register_forward_pre_hook(
            lambda _m, args, kwargs: (
                seen.append(args[0].dtype) if args else seen.append(kwargs["hidden_states"].dtype)
            ),
            with_kwargs=True,
        )
        for layer in model.model.layers
    ]
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model(input_ids=ids, labels=ids)
    finally:
        for h in hooks:
            h.remove()
    return seen, out


@pytest.fixture()
def model():
    return model_from_config_dict(tiny_config_dict(128, layers=2))


def test_fp32_masters_under_autocast_get_a_bf16_stream(model):
    ids = torch.randint(0, 128, (2, 16))
    plain, _ = _layer_input_dtypes(model, ids, autocast=True)
    assert plain == [torch.float32, torch.float32]  # autocast alone: the fp32 stream
    precision.apply(model, AutoPlan(dtype="bf16", master_weights="fp32", hidden_dtype="bf16"))
    cast, out = _layer_input_dtypes(model, ids, autocast=True)
    assert cast == [torch.bfloat16, torch.bfloat16]
    out.loss.backward()
    # the weights and their gradients stay the fp32 masters
    emb = model.get_input_embeddings().weight
    assert emb.dtype == torch.float32 and emb.grad.dtype == torch.float32
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in model.parameters())


def test_outside_autocast_the_stream_is_left_alone(model):
    # evaluation or generation after training runs the fp32 layers without autocast:
    # a bf16 stream there would be refused by the fp32 projections
    precision.apply(model, AutoPlan(dtype="bf16", master_weights="fp32", hidden_dtype="bf16"))
    ids = torch.randint(0, 128, (1, 8))
    seen, out = _layer_input_dtypes(model, ids, autocast=False)
    assert seen == [torch.float32, torch.float32] and torch.isfinite(out.loss)


def test_the_loss_matches_the_fp32_stream_within_bf16_rounding(model):
    ids = torch.randint(0, 128, (2, 32))
    _, before = _layer_input_dtypes(model, ids, autocast=True)
    precision.apply(model, AutoPlan(dtype="bf16", master_weights="fp32", hidden_dtype="bf16"))
    _, after = _layer_input_dtypes(model, ids, autocast=True)
    assert after.loss.item() == pytest.approx(before.loss.item(), rel=2e-2)


@pytest.mark.parametrize(
    ("plan", "hooked"),
    [
        (AutoPlan(dtype="bf16", master_weights="fp32", hidden_dtype="bf16"), True),
        (AutoPlan(dtype="bf16", master_weights="fp32", hidden_dtype="fp32"), False),
        (AutoPlan(dtype="bf16", master_weights="bf16", hidden_dtype="bf16"), False),
        (AutoPlan(dtype="fp32", master_weights="fp32", hidden_dtype="fp32"), False),
    ],
)
def test_only_the_mixed_plan_is_hooked(model, plan, hooked):
    assert (precision.apply(model, plan) is not None) is hooked


def test_the_plan_keeps_fp32_masters_with_a_bf16_stream_on_the_h100():
    shape = KNOWN_SHAPES["0.5b"]
    for cfg in (SFTRunConfig(), GRPORunConfig()):
        plan = decide(machine_snapshot("h100-fa-vllm"), cfg, shape, seq_len=2048)
        assert (plan.master_weights, plan.hidden_dtype) == ("fp32", "bf16")
        assert any(d.setting == "hidden_dtype" for d in plan.decisions)
    plan = decide(
        machine_snapshot("h100-fa-vllm"), SFTRunConfig(hidden_dtype="fp32"), shape, seq_len=2048
    )
    assert plan.hidden_dtype == "fp32"
    # nothing to choose: CPU computes in fp32; pure bf16 weights make a bf16 stream
    cpu = decide(machine_snapshot("cpu"), SFTRunConfig(), shape, seq_len=2048)
    assert cpu.hidden_dtype == "fp32"
    assert not any(d.setting == "hidden_dtype" for d in cpu.decisions)
    pure = decide(
        machine_snapshot("h100-fa-vllm"), SFTRunConfig(learning_rate=2e-4), shape, seq_len=2048
    )
    assert (pure.master_weights, pure.hidden_dtype) == ("bf16", "bf16")


def test_the_memory_model_counts_the_stream_it_is_told():
    shape = KNOWN_SHAPES["0.5b"]
    kw = dict(seq_len=16384, micro_batch=1, dtype="bf16", master_fp32=True, fused_kernels=True)
    fp32 = estimate_training_memory(shape, **kw)
    assert estimate_training_memory(shape, fp32_hidden=True, **kw) == fp32
    bf16 = estimate_training_memory(shape, fp32_hidden=False, **kw)
    # 8 bytes/token/hidden unit per layer less saved for the backward pass
    assert fp32.activations - bf16.activations == shape.layers * 16384 * 8 * shape.hidden
    assert (fp32.weights, fp32.optimizer) == (bf16.weights, bf16.optimizer)
    # pure bf16 weights have a bf16 stream whatever the caller says
    pure = dict(kw, master_fp32=False)
    assert estimate_training_memory(shape, fp32_hidden=True, **pure) == (
        estimate_training_memory(shape, **pure)
    )


def test_grpo_sizes_its_micro_batch_as_with_the_fp32_stream():
    # GRPO's estimate ran under its measured peak; counting the bf16 stream picked a
    # micro batch that ran out of the H100's memory (1.5B, 64 completions of 256 tokens)
    shape = KNOWN_SHAPES["1.5b"]
    kw = dict(global_batch_size=64, num_generations=8, max_completion_length=256, use_vllm="off")
    snap = machine_snapshot("h100-fa-vllm")
    auto = decide(snap, GRPORunConfig(**kw), shape, seq_len=1450)
    fp32 = decide(snap, GRPORunConfig(hidden_dtype="fp32", **kw), shape, seq_len=1450)
    assert auto.hidden_dtype == "bf16" and fp32.hidden_dtype == "fp32"
    assert (auto.micro_batch_size, auto.predicted_peak_bytes) == (
        fp32.micro_batch_size,
        fp32.predicted_peak_bytes,
    )
