"""Packed (padding-free) SFT never lets examples attend to each other.

Per-example losses and gradients of a packed micro batch (TRL's padding-free collator,
the `sdpa_varlen` attention) must equal those of each example run alone; a planted
kernel that attends across examples must fail the same comparison."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from machines import machine_snapshot  # noqa: E402

from shop_r1 import packing, train_sft  # noqa: E402
from shop_r1.autoconfig import decide  # noqa: E402
from shop_r1.config import SFTRunConfig  # noqa: E402
from shop_r1.tiny import tiny_config_dict  # noqa: E402

CPU = machine_snapshot("cpu")
# GQA (4 query heads on 2 kv heads), three examples of different lengths
CONFIG = tiny_config_dict(300, hidden=64, layers=2, heads=4, kv_heads=2)
LENGTHS = [37, 12, 61]


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(2)


def test_packed_losses_and_gradients_equal_unpacked():
    packing.register()
    result = packing.packed_vs_unpacked(CONFIG, packing.NAME, LENGTHS)
    assert result["max_loss_rel_diff"] < 1e-5, result
    assert result["grad_rel_diff"] < 1e-5, result


def _attends_across(module, query, key, value, attention_mask, **kwargs):
    """The planted bug: one causal attention over the whole packed row."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    kwargs.pop("cu_seq_lens_q", None)
    return sdpa_attention_forward(module, query, key, value, None, **kwargs)


def test_a_kernel_that_attends_across_examples_fails_the_check():
    from transformers import AttentionInterface

    AttentionInterface.register("shop_r1_test_cross", _attends_across)
    result = packing.packed_vs_unpacked(CONFIG, "shop_r1_test_cross", LENGTHS)
    # the first example sees nothing before it; the later ones see their neighbours
    assert result["loss_rel_diff"][0] < 1e-5
    assert min(result["loss_rel_diff"][1:]) > 1e-3, result
    assert result["grad_rel_diff"] > 1e-3, result


def test_transformers_sdpa_with_positions_alone_keeps_examples_apart():
    """No cu_seq_lens: the packed boundaries come from the restarting position_ids."""
    packing.register()

    def positions_only(module, query, key, value, attention_mask, **kwargs):
        kwargs.pop("cu_seq_lens_q", None)
        return packing.varlen_attention_forward(module, query, key, value, None, **kwargs)

    from transformers import AttentionInterface

    AttentionInterface.register("shop_r1_test_positions", positions_only)
    result = packing.packed_vs_unpacked(CONFIG, "shop_r1_test_positions", LENGTHS)
    assert result["max_loss_rel_diff"] < 1e-5, result


@pytest.mark.slow
def test_first_step_loss_of_packed_training_equals_padded(tmp_path):
    """Through TRL's trainer: the same rows, padded (sdpa) or packed (sdpa_varlen)."""
    from transformers import AttentionInterface

    from shop_r1.data.prompts import sft_rows
    from shop_r1.data.synth import generate_sessions
    from shop_r1.tiny import make_tiny_model_and_tokenizer
    from shop_r1_doctor.memory import ModelShape

    seen = []

    def spy(module, query, key, value, attention_mask, **kwargs):
        seen.append(kwargs.get("cu_seq_lens_q") is not None and query.shape[0] == 1)
        return packing.varlen_attention_forward(module, query, key, value, attention_mask, **kwargs)

    packing.register()
    AttentionInterface.register("shop_r1_test_spy", spy)
    rows = sft_rows(generate_sessions(6, seed=1), context="latest", max_tokens=120)
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    losses = {}
    for packed in (False, True):
        model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=600)
        shape = ModelShape.from_config_dict(model.config.to_dict())
        cfg = SFTRunConfig(
            model="tiny",
            data="-",
            output_dir=str(tmp_path / str(packed)),
            max_steps=2,
            global_batch_size=4,
            micro_batch_size=4,
            logging_steps=1,
            save_steps=100,
            report_to="none",
            max_length=1024,
            packing="on" if packed else "off",
            attn_implementation=packing.NAME if packed else "sdpa",
        )
        plan = decide(CPU, cfg, shape, seq_len=1024)
        assert plan.padding_free is packed
        if packed:  # a spy around sdpa_varlen: proves the batches really came packed
            plan.attn_implementation = "shop_r1_test_spy"
            model.set_attn_implementation(plan.attn_implementation)
        summary = train_sft.train(cfg, plan, rows, model=model, tokenizer=tok, shape=shape)
        losses[packed] = summary["first_loss"]
    assert seen and all(seen)
    # healthy: ~1e-7 apart; a kernel attending across examples moved it 1.3e-4
    assert losses[True] == pytest.approx(losses[False], rel=1e-6)


@pytest.mark.parametrize(
    ("query", "autocast", "weight", "expected"),
    [
        # fp32 master weights under bf16 autocast: RoPE's fp32 cos/sin promote q/k to
        # fp32; the kernel must still run, in autocast's dtype (the SFT speed regression)
        ("float32", "bfloat16", "float32", "bfloat16"),
        ("float32", "float16", "float32", "float16"),
        ("bfloat16", None, "bfloat16", "bfloat16"),  # pure bf16
        ("float16", "bfloat16", "float32", "float16"),  # already half: as it comes
        ("float32", None, "bfloat16", "bfloat16"),  # PEFT-style fp32 norms, bf16 weights
        ("float32", None, "float32", None),  # plain fp32: the exact per-example path
        ("float32", "float32", "float32", None),  # fp32 "autocast" has no half dtype
        ("float64", "bfloat16", "float32", None),
    ],
)
def test_the_varlen_kernel_runs_in_a_half_dtype_whenever_one_is_in_play(
    query, autocast, weight, expected
):
    dt = lambda name: None if name is None else getattr(torch, name)  # noqa: E731
    assert packing.target_dtype(dt(query), dt(autocast), dt(weight)) == dt(expected)


def test_fp32_weights_under_bf16_autocast_hand_the_kernel_fp32_queries():
    """Why `target_dtype` must look past the query's dtype: with fp32 weights under bf16
    autocast (auto's fp32 master weights) the query arrives in fp32 (RoPE promotes it)."""
    from transformers import AttentionInterface

    from shop_r1.tiny import model_from_config_dict

    seen = []

    def spy(module, query, key, value, attention_mask, **kwargs):
        seen.append(query.dtype)
        return packing.varlen_attention_forward(module, query, key, value, attention_mask, **kwargs)

    packing.register()
    AttentionInterface.register("shop_r1_test_dtype_spy", spy)
    model = model_from_config_dict(CONFIG, attn_implementation="shop_r1_test_dtype_spy")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(input_ids=torch.randint(1, 300, (1, 9)))
    assert seen == [torch.float32, torch.float32]  # one per layer


@pytest.mark.parametrize("padded", [False, True])
def test_generate_on_sdpa_varlen_equals_sdpa(padded):
    """Greedy generation through `sdpa_varlen` (decoding steps with a KV cache are not
    packed forwards) gives sdpa's tokens, for one unpadded row and a left-padded batch."""
    from shop_r1.tiny import model_from_config_dict

    packing.register()
    gen = torch.Generator().manual_seed(3)
    rows = [torch.randint(1, 300, (n,), generator=gen) for n in ((7, 12) if padded else (12,))]
    width = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for i, r in enumerate(rows):  # left padding, as generation pads
        ids[i, width - len(r) :], mask[i, width - len(r) :] = r, 1
    out = {}
    for attn in ("sdpa", packing.NAME):
        model = model_from_config_dict(CONFIG, attn_implementation=attn).eval()
        out[attn] = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0
        )
    assert torch.equal(out["sdpa"], out[packing.NAME])


def test_left_padded_forward_on_sdpa_varlen_equals_sdpa_at_every_kept_token():
    """A left-padded batch is not packed: the CPU fallback must honour the padding mask.
    Greedy tokens of a tiny random model hide a kernel that attends to the pad tokens;
    the logits of every kept token do not."""
    from shop_r1.tiny import model_from_config_dict

    packing.register()
    gen = torch.Generator().manual_seed(5)
    lengths = (5, 12, 9)
    width = max(lengths)
    ids = torch.zeros(len(lengths), width, dtype=torch.long)
    mask = torch.zeros(len(lengths), width, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, width - n :] = torch.randint(1, 300, (n,), generator=gen)
        mask[i, width - n :] = 1
    logits = {}
    for attn in ("sdpa", packing.NAME):
        model = model_from_config_dict(CONFIG, attn_implementation=attn).eval()
        with torch.no_grad():
            logits[attn] = model(input_ids=ids, attention_mask=mask).logits
    kept = mask.bool()
    diff = (logits["sdpa"][kept] - logits[packing.NAME][kept]).abs().max().item()
    assert diff < 1e-5, diff


def test_pack_bins_keeps_every_row_whole_within_the_budget():
    from datasets import Dataset

    lengths = [37, 12, 61, 5, 40, 33]
    rows = Dataset.from_list(
        [{"input_ids": list(range(1, n + 1)), "labels": [-100, *range(2, n + 1)]} for n in lengths]
    )
    bins = train_sft.pack_bins(rows, 64, seed=0)
    seqs = [b["seq_lengths"] for b in bins]
    assert sorted(n for s in seqs for n in s) == sorted(lengths)  # every row, uncut
    assert all(len(b["input_ids"]) == sum(s) <= 64 for b, s in zip(bins, seqs, strict=True))
    assert len(bins) == 4  # best-fit-decreasing: no two of 61, 40, 37, 33 share a bin of 64
    assert [b["seq_lengths"] for b in train_sft.pack_bins(rows, 64, seed=0)] == seqs


@pytest.mark.slow
def test_first_step_loss_of_token_budget_bins_equals_padded(tmp_path):
    """Through TRL's trainer: one step of every row, padded (sdpa) or in one token-budget
    bin (`plan.token_budget`, sdpa_varlen): the same loss."""
    from shop_r1.data.prompts import sft_rows
    from shop_r1.data.synth import generate_sessions
    from shop_r1.tiny import make_tiny_model_and_tokenizer
    from shop_r1_doctor.memory import ModelShape

    packing.register()
    rows = sft_rows(generate_sessions(3, seed=2), context="latest", max_tokens=120)[:6]
    texts = [m["content"] for r in rows for m in r["prompt"] + r["completion"]]
    losses = {}
    for bins in (False, True):
        model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=600)
        shape = ModelShape.from_config_dict(model.config.to_dict())
        cfg = SFTRunConfig(
            model="tiny",
            data="-",
            output_dir=str(tmp_path / str(bins)),
            max_steps=1,
            global_batch_size=len(rows),
            micro_batch_size=len(rows),
            logging_steps=1,
            save_steps=100,
            report_to="none",
            max_length=1024,
            packing="on" if bins else "off",
            attn_implementation=packing.NAME if bins else "sdpa",
        )
        plan = decide(CPU, cfg, shape, seq_len=1024)
        if bins:  # the CPU plan has no bins (no GPU kernel): set the GPU plan's by hand
            plan.token_budget, plan.micro_batch_size = 1 << 16, 1
        summary = train_sft.train(cfg, plan, rows, model=model, tokenizer=tok, shape=shape)
        losses[bins] = summary["first_loss"]
    assert losses[True] == pytest.approx(losses[False], rel=1e-6)
