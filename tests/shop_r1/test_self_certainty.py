"""Self-certainty: the formula on hand-made logits, token alignment on a tiny model."""

from __future__ import annotations

import json
import math
import pickle

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from shop_r1.rewards import RewardConfig  # noqa: E402
from shop_r1.self_certainty import SelfCertaintyReward, self_certainty, token_mask  # noqa: E402

V = 64


class CharTokenizer:
    """A fake of the outside world: one token per character, with offsets."""

    pad_token_id = 0

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        ids = [1 + ord(c) % (V - 1) for c in text]
        out = {"input_ids": ids}
        if return_offsets_mapping:
            out["offset_mapping"] = [(i, i + 1) for i in range(len(text))]
        return out

    def decode(self, ids, skip_special_tokens=False):
        return "x" * len(ids)

    def apply_chat_template(
        self, messages, add_generation_prompt=True, tokenize=True, return_dict=False
    ):
        return self("".join(m["content"] for m in messages))["input_ids"]


def test_formula_uniform_and_one_hot():
    assert self_certainty(torch.zeros(1, 3, 10), torch.ones(1, 3)).item() == pytest.approx(
        0.0, abs=1e-6
    )
    one_hot = torch.full((2, 2, 10), -1e4)
    one_hot[..., 0] = 0
    mask = torch.tensor([[1, 1], [0, 0]])
    assert self_certainty(one_hot, mask).tolist() == pytest.approx([math.log(10), 0.0], abs=1e-5)
    # a two-point distribution: log|V| - log 2
    two = torch.full((1, 1, 8), -1e4)
    two[..., :2] = 0
    assert self_certainty(two, torch.ones(1, 1)).item() == pytest.approx(
        math.log(8) - math.log(2), abs=1e-5
    )


def test_token_mask_overlap():
    assert token_mask([(0, 2), (2, 5), (5, 9), (9, 10)], (3, 9)) == [False, True, True, False]


@pytest.fixture(scope="module")
def tiny_model():
    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
    )
    return transformers.Qwen2ForCausalLM(config).eval()


def _manual(model, tok, prompt, completion, span):
    p = tok(prompt)["input_ids"]
    c = tok(completion)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([p + c])).logits[0]
    values = []
    for k in range(len(c)):
        if span[0] <= k < span[1]:
            logp = torch.log_softmax(logits[len(p) + k - 1].float(), -1)
            values.append(math.log(V) + (logp.exp() * logp).sum().item())
    return sum(values) / len(values)


def test_reward_matches_manual_computation_and_batches(tiny_model):
    tok = CharTokenizer()
    reward = SelfCertaintyReward(RewardConfig(alpha=0.5), batch_size=2).bind(tiny_model, tok)
    completions = [
        json.dumps({"rationale": "I like it.", "action": {"type": "click", "name": "buy"}}),
        json.dumps({"rationale": "Too pricey for me, leaving.", "action": {"type": "terminate"}}),
        "not json",
        json.dumps({"action": {"type": "terminate"}, "rationale": "Bye."}),
    ]
    prompts = ["a short prompt", "a much longer prompt than the first one", "p", "prompt four"]
    got = reward(completions, prompts=prompts)
    assert got[2] == 0.0
    for i in (0, 1, 3):
        text = completions[i]
        key = text.index('"rationale": "') + len('"rationale": "')
        span = (key, text.index('"', key))
        assert got[i] == pytest.approx(
            0.5 * _manual(tiny_model, tok, prompts[i], text, span), rel=1e-4, abs=1e-6
        )
        assert 0.0 < got[i] <= 0.5 * math.log(V)


def test_unbound_raises_and_pickle_drops_the_model(tiny_model):
    with pytest.raises(RuntimeError, match="bind"):
        SelfCertaintyReward()(["x"])
    reward = SelfCertaintyReward().bind(tiny_model, CharTokenizer())
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.model is None and clone.__name__ == "self_certainty" and reward.model is tiny_model
