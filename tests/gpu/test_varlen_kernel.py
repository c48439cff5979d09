"""torch's varlen kernel as `sdpa_varlen` runs it in training and generation, on a GPU.

The CPU tests cover the exact per-example path; these cover the kernel itself: it must
run (not the per-example fallback) for fp32 master weights under bf16 autocast, the
setting auto picks below lr 1e-4, and agree with plain sdpa on packed rows, on left-padded
batches and on one unpadded row."""

import itertools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from shop_r1 import packing  # noqa: E402
from shop_r1.tiny import model_from_config_dict, tiny_config_dict  # noqa: E402

if not packing.kernel_available():
    pytest.skip(
        "needs a CUDA GPU with torch's varlen kernel (benchmarks/headline.py runs it)",
        allow_module_level=True,
    )

# 2 layers of the Qwen2.5-0.5B attention shape (14 query heads on 2 kv heads)
CONFIG = tiny_config_dict(
    32000, hidden=896, layers=2, heads=14, kv_heads=2, intermediate=4864, max_positions=8192
)
LENGTHS = [1500, 300, 2700, 64, 900]


@pytest.fixture
def kernel_calls(monkeypatch):
    """How many forwards went through torch's kernel (a counter around the real call)."""
    calls = []
    real = packing._varlen_call

    def counted(*args, **kwargs):
        calls.append(args[0].dtype)
        return real(*args, **kwargs)

    monkeypatch.setattr(packing, "_varlen_call", counted)
    return calls


def _rows(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(1, CONFIG["vocab_size"], (n,), generator=gen) for n in LENGTHS]


def _losses(logits, ids):
    return torch.nn.functional.cross_entropy(logits[:-1].float(), ids[1:], reduction="sum")


@pytest.mark.parametrize("weights", ["fp32-autocast", "bf16"])
def test_packed_rows_run_the_kernel_and_match_sdpa(weights, kernel_calls):
    packing.register()
    dtype = torch.float32 if weights == "fp32-autocast" else torch.bfloat16
    rows = _rows()
    ref = model_from_config_dict(CONFIG, dtype=dtype, attn_implementation="sdpa").cuda()
    model = model_from_config_dict(CONFIG, dtype=dtype, attn_implementation=packing.NAME).cuda()
    packed = torch.cat(rows)[None].cuda()
    positions = torch.cat([torch.arange(n) for n in LENGTHS])[None].cuda()
    cu = torch.tensor([0, *itertools.accumulate(LENGTHS)], dtype=torch.int32).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=weights == "fp32-autocast"):
        logits = model(
            input_ids=packed,
            position_ids=positions,
            cu_seq_lens_q=cu,
            cu_seq_lens_k=cu,
            max_length_q=max(LENGTHS),
            max_length_k=max(LENGTHS),
            use_cache=False,
        ).logits[0]
        bounds = cu.tolist()
        got = [_losses(logits[a:b], packed[0, a:b]) for a, b in itertools.pairwise(bounds)]
        want = [_losses(ref(input_ids=r[None].cuda()).logits[0], r.cuda()) for r in rows]
    # one kernel call per layer, in bf16 (the per-example fallback makes none)
    assert kernel_calls == [torch.bfloat16] * CONFIG["num_hidden_layers"]
    rel = [float(((g - w).abs() / w.abs()).detach()) for g, w in zip(got, want, strict=True)]
    assert max(rel) < 1e-2, rel


@pytest.mark.parametrize("lengths", [(37,), (20, 37)])
def test_generation_equals_sdpa(lengths, kernel_calls):
    """One unpadded row (decoding with a KV cache is not a packed forward: it crashed
    `torch.cat` once) and a left-padded batch (the 2D-mask fallback), greedy, bf16."""
    packing.register()
    gen = torch.Generator().manual_seed(1)
    rows = [torch.randint(1, CONFIG["vocab_size"], (n,), generator=gen) for n in lengths]
    width = max(lengths)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, width - len(r) :], mask[i, width - len(r) :] = r, 1
    out = {}
    for attn in ("sdpa", packing.NAME):
        model = model_from_config_dict(CONFIG, dtype=torch.bfloat16, attn_implementation=attn)
        out[attn] = (
            model.cuda()
            .eval()
            .generate(
                input_ids=ids.cuda(),
                attention_mask=mask.cuda(),
                max_new_tokens=8,
                do_sample=False,
                pad_token_id=0,
            )
        )
    assert torch.equal(out["sdpa"], out[packing.NAME])
