"""The two guards against NaN weights in training (found on an H100, GRPO step 43):

- `_compat.guard_sdpa_padded_rows`: left-padded query rows that attend to nothing get a
  row of keys, so SDPA's memory-efficient backward has no -inf log-sum-exp to turn into
  NaN. On the CPU the kernel that fails is not available, so these tests pin what the
  fix must keep: no all-False row reaches SDPA, and real positions' logits and every
  gradient are the same as without it.
- `callbacks.NonFiniteGradGuard`: a real transformers `Trainer` run in which one batch
  gives NaN gradients keeps finite weights, records the dropped step, and stops with a
  one-line error when the failures repeat.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from shop_r1 import _compat  # noqa: E402
from shop_r1.callbacks import NonFiniteGradGuard  # noqa: E402
from shop_r1.tiny import model_from_config_dict, tiny_config_dict  # noqa: E402
from shop_r1_doctor.errors import ToolError  # noqa: E402


@pytest.fixture
def restore_sdpa_mask():
    from transformers.masking_utils import AttentionMaskInterface

    saved = AttentionMaskInterface._global_mapping["sdpa"]
    yield
    AttentionMaskInterface._global_mapping["sdpa"] = saved


def _left_padded_batch():
    ids = torch.randint(3, 200, (3, 12), generator=torch.Generator().manual_seed(0))
    mask = torch.ones(3, 12, dtype=torch.long)
    mask[0, :7] = 0  # 7 left-padded positions: their query rows see no real key
    mask[1, :2] = 0
    return ids, mask


def _forward_backward(model, ids, mask):
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=mask).logits
    # the loss only reads real positions, as GRPO's completion mask does
    loss = (logits.float().logsumexp(-1) * mask).sum()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logits.detach(), grads


def test_sdpa_guard_leaves_real_positions_and_gradients_unchanged(restore_sdpa_mask):
    torch.manual_seed(0)
    cfg = tiny_config_dict(vocab_size=256, hidden=32, layers=2, heads=4, kv_heads=2)
    model = model_from_config_dict(cfg, attn_implementation="sdpa")
    ids, mask = _left_padded_batch()
    plain_logits, plain_grads = _forward_backward(model, ids, mask)

    _compat.guard_sdpa_padded_rows()
    _compat.guard_sdpa_padded_rows()  # idempotent: wraps once
    guarded_logits, guarded_grads = _forward_backward(model, ids, mask)

    real = mask.bool()
    assert torch.allclose(plain_logits[real], guarded_logits[real], atol=1e-5)
    assert plain_grads.keys() == guarded_grads.keys()
    for name, grad in guarded_grads.items():
        assert torch.isfinite(grad).all(), name
        assert torch.allclose(grad, plain_grads[name], atol=1e-5), name


def test_sdpa_guard_mask_has_no_empty_rows(restore_sdpa_mask):
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    _, mask = _left_padded_batch()
    plain = sdpa_mask(batch_size=3, q_length=12, kv_length=12, attention_mask=mask.bool())
    assert (~plain).all(-1).any()  # transformers' own mask has rows that see nothing

    _compat.guard_sdpa_padded_rows()
    guarded = ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](
        batch_size=3, q_length=12, kv_length=12, attention_mask=mask.bool()
    )
    assert not (~guarded).all(-1).any()
    # rows that saw a real key are untouched
    keep = plain.any(-1, keepdim=True).expand_as(plain)
    assert torch.equal(guarded[keep], plain[keep])
    # no padding: transformers skips the mask (is_causal) and so does the guard
    full = torch.ones(3, 12, dtype=torch.bool)
    kw = dict(batch_size=3, q_length=12, kv_length=12, attention_mask=full)
    assert ALL_MASK_ATTENTION_FUNCTIONS["sdpa"](**kw) is None


class _Linear(torch.nn.Module):
    """y = w.x; a NaN in one sample's x makes that batch's gradient NaN."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4))

    def forward(self, x, labels=None):
        loss = ((x * self.w).sum(-1) - labels).pow(2).mean()
        return {"loss": loss}


def _train(tmp_path, bad_samples, steps=6, optim="adamw_torch", logging_steps=1):
    from transformers import Trainer, TrainingArguments

    rows = [{"x": [1.0, 2.0, 3.0, 4.0], "labels": 1.0} for _ in range(steps)]
    for i in bad_samples:
        rows[i]["x"] = [float("nan")] * 4
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=1,
        max_steps=steps,
        learning_rate=0.01,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=logging_steps,
        optim=optim,
    )

    class Rows(torch.utils.data.Dataset):
        def __len__(self):
            return len(rows)

        def __getitem__(self, i):
            return {"x": torch.tensor(rows[i]["x"]), "labels": torch.tensor(rows[i]["labels"])}

    guard = NonFiniteGradGuard(max_consecutive=2)
    model = _Linear()
    trainer = Trainer(model=model, args=args, train_dataset=Rows(), callbacks=[guard])
    trainer.get_train_dataloader = lambda: torch.utils.data.DataLoader(Rows(), batch_size=1)
    trainer.train()
    return model, guard


# adamw_torch: the flag read at once, gradients zeroed; adamw_torch_fused: the fused
# kernel skips the update on the device, the flags read when the trainer logs (every
# step, or only at the end of training)
OPTIMS = [("adamw_torch", 1), ("adamw_torch_fused", 1), ("adamw_torch_fused", 100)]


@pytest.mark.parametrize(("optim", "logging_steps"), OPTIMS)
def test_guard_drops_a_nan_update_and_training_goes_on(tmp_path, optim, logging_steps):
    model, guard = _train(tmp_path, bad_samples=[2], optim=optim, logging_steps=logging_steps)
    assert guard.skipped == [3] and not guard.pending
    assert torch.isfinite(model.w).all()
    assert not torch.equal(model.w.detach(), torch.ones(4))  # the good steps did train


@pytest.mark.parametrize(("optim", "logging_steps"), OPTIMS)
def test_guard_stops_a_run_that_keeps_failing(tmp_path, optim, logging_steps):
    with pytest.raises(ToolError, match=r"3 optimizer steps in a row had NaN/inf gradients"):
        _train(tmp_path, bad_samples=[1, 2, 3], optim=optim, logging_steps=logging_steps)


def test_fused_skip_waits_for_nothing_and_leaves_the_optimizer_state(monkeypatch):
    """The device-side skip: no read of a tensor on the host before the step, and the
    fused kernel leaves weights, moments and the step count as they were."""
    from types import SimpleNamespace

    model = _Linear()
    opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    args = SimpleNamespace(fp16=False)
    guard = NonFiniteGradGuard()

    def step(x):
        model.zero_grad()
        model(x, labels=torch.tensor(1.0))["loss"].backward()
        guard.on_pre_optimizer_step(args, state, None, model=model, optimizer=opt)
        opt.step()
        state.global_step += 1

    step(torch.ones(4))  # a good step: moments exist
    w, m, n = (
        t.clone() for t in (model.w, opt.state[model.w]["exp_avg"], opt.state[model.w]["step"])
    )

    def no_host_read(*a, **kw):
        raise AssertionError("the guard read a tensor on the host before the step")

    for name in ("__bool__", "item", "tolist", "cpu"):
        monkeypatch.setattr(torch.Tensor, name, no_host_read)
    step(torch.full((4,), math.nan))
    monkeypatch.undo()
    assert torch.equal(model.w, w) and torch.equal(opt.state[model.w]["exp_avg"], m)
    assert torch.equal(opt.state[model.w]["step"], n)
    guard.resolve(state)
    assert guard.skipped == [2] and guard.consecutive == 1
    step(torch.ones(4))  # the flag is set again each step: a good one trains
    assert not torch.equal(model.w, w)
    guard.resolve(state)
    assert guard.skipped == [2] and guard.consecutive == 0


def test_without_the_guard_the_weights_go_nan(tmp_path):
    """The failure the guard exists for: transformers' Trainer applies a NaN update."""
    from transformers import Trainer, TrainingArguments

    model = _Linear()
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=1, use_cpu=True, report_to=[], save_strategy="no"
    )
    ds = [{"x": torch.full((4,), math.nan), "labels": torch.tensor(1.0)}]
    Trainer(model=model, args=args, train_dataset=ds).train()
    assert not torch.isfinite(model.w).all()


def test_nonfinite_is_one_answer_for_all_gradients():
    from shop_r1.callbacks import nonfinite

    grads = [torch.ones(3), torch.full((2, 2), 0.5)]
    assert not bool(nonfinite(grads))
    for bad in (float("nan"), float("inf"), float("-inf")):
        grads[1][0, 1] = bad
        assert bool(nonfinite(grads))


def test_summary_clock_waits_for_the_gpu_only_at_its_two_ends(monkeypatch):
    """A sync at every step left the GPU idle while the host prepared the next batch."""
    from types import SimpleNamespace

    from shop_r1 import callbacks
    from shop_r1_doctor.api import KNOWN_SHAPES

    synced = []
    monkeypatch.setattr(callbacks, "_sync", lambda: synced.append(state.global_step))
    summary = callbacks.SummaryCallback(KNOWN_SHAPES["0.5b"], 512, warmup_steps=2)
    state = SimpleNamespace(global_step=0, max_steps=10)
    for step in range(1, 11):
        state.global_step = step
        summary.on_step_end(None, state, None)
    assert synced == [2, 10]
    assert summary.start is not None and summary.end > summary.start


def test_fsdp2_shards_skip_a_nan_update_on_the_device(monkeypatch):
    """FSDP2 hands the fused kernel DTensor parameters and the guard a plain 0-d flag
    (agreed across ranks by all-reduce): the skip must hold for sharded weights too.
    One rank on CPU (gloo), the same code path as on GPUs."""
    import socket
    from types import SimpleNamespace

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for k, v in dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0").items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("WORLD_SIZE", "1")
    dist.init_process_group("gloo")
    try:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1))
        fully_shard(model, mesh=init_device_mesh("cpu", (1,)))
        opt = torch.optim.AdamW(model.parameters(), lr=0.1, fused=True)
        state = SimpleNamespace(global_step=0, is_world_process_zero=True)
        guard = NonFiniteGradGuard()

        def step(x):
            opt.zero_grad()
            model(x).sum().backward()
            guard.on_pre_optimizer_step(
                SimpleNamespace(fp16=False), state, None, model=model, optimizer=opt
            )
            opt.step()
            state.global_step += 1

        def weights():
            return [p.detach().full_tensor().clone() for p in model.parameters()]

        step(torch.ones(2, 4))
        good = weights()
        step(torch.full((2, 4), math.nan))
        assert all(torch.equal(a, b) for a, b in zip(good, weights(), strict=True))
        guard.resolve(state)
        assert guard.skipped == [2]
        step(torch.ones(2, 4))
        assert not all(torch.equal(a, b) for a, b in zip(good, weights(), strict=True))
    finally:
        dist.destroy_process_group()
