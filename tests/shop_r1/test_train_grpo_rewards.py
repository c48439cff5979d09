"""The Shop-R1 reward through the GRPO trainer's own wiring and TRL's reward call.

`shop_r1.train_grpo.train` builds the GRPOTrainer (reward functions from the run config,
dataset columns, TRL config); instead of optimising, its `train` here asks TRL to score
scripted completions with `GRPOTrainer._calculate_rewards` (the call TRL makes in every
step, passing the `gold_action` column as a keyword) and sums them with TRL's reward
weights. Expected totals are hand-computed from the paper's Table 1:

    format 0.5 + type 0.3 + attribute 0.2 + value DARS x cr(ROUGE-L), cr(s) = s if s >= threshold
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from machines import snapshot_path  # noqa: E402

from shop_r1 import train_grpo  # noqa: E402
from shop_r1.autoconfig import decide  # noqa: E402
from shop_r1.config import GRPORunConfig  # noqa: E402
from shop_r1.tiny import make_tiny_model_and_tokenizer  # noqa: E402
from shop_r1_doctor.memory import ModelShape  # noqa: E402

CPU_SNAPSHOT = snapshot_path("cpu")
GOLD = json.dumps({"type": "click", "name": "add_to_cart"})


def _completion(name: str | None, kind: str = "click") -> str:
    action = {"type": kind} if name is None else {"type": kind, "name": name}
    return json.dumps({"rationale": "I want it.", "action": action})


# What TRL is asked to score: (completion text, note)
COMPLETIONS = [
    _completion("add_to_cart"),  # ROUGE-L 1
    _completion("add to cart now"),  # [add,to,cart,now] vs [add,to,cart]: F = 6/7
    _completion("cart"),  # P = 1, R = 1/3: F = 1/2
    _completion(None, "terminate"),  # wrong type: format only
    "not json",  # nothing
    _completion("add to basket"),  # [add,to,basket]: LCS 2, P = R = 2/3: F = 2/3
]

# (case, config overrides, expected totals per completion)
ROWS = [
    (
        "paper defaults",
        {},
        [1001.0, 1.0 + 6000 / 7, 1.0, 0.5, 0.0, 1.0],
    ),
    (
        "dars 10, threshold 0.6",
        {"dars": 10.0, "rouge_threshold": 0.6},
        [11.0, 1.0 + 60 / 7, 1.0, 0.5, 0.0, 1.0 + 20 / 3],
    ),
    (
        "threshold 0.9 cuts 6/7",
        {"rouge_threshold": 0.9},
        [1001.0, 1.0, 1.0, 0.5, 0.0, 1.0],
    ),
    (
        "threshold 0.5 credits F = 1/2 exactly",
        {"rouge_threshold": 0.5},
        [1001.0, 1.0 + 6000 / 7, 1.0 + 500.0, 0.5, 0.0, 1.0 + 2000 / 3],
    ),
    (
        # binary ablation: format + 1 for an exact match (same name), else format only
        "binary",
        {"binary_reward": True},
        [1.5, 0.5, 0.5, 0.5, 0.0, 0.5],
    ),
]


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(2)
    texts = [*COMPLETIONS, "Which button next?", GOLD]
    model, tok = make_tiny_model_and_tokenizer(texts, vocab_size=300, layers=1)
    shape = ModelShape.from_config_dict(model.config.to_dict(), name="tiny")
    return model, tok, shape


def _rewards_through_trainer(tmp_path, monkeypatch, tiny, overrides):
    from trl import GRPOTrainer

    model, tok, shape = tiny
    cfg = GRPORunConfig(
        model="tiny",
        data="d",
        output_dir=str(tmp_path),
        global_batch_size=len(COMPLETIONS),
        num_generations=2,
        micro_batch_size=len(COMPLETIONS),
        max_completion_length=8,
        report_to="none",
        self_certainty_weight=0.0,
        beta=0.0,  # no reference model: TRL would load it from the (unsaved) model's path
        **overrides,
    )
    plan = decide(json.loads(CPU_SNAPSHOT.read_text()), cfg, shape, seq_len=64)
    rows = [
        {"prompt": [{"role": "user", "content": "Which button next?"}], "gold_action": GOLD}
    ] * len(COMPLETIONS)
    seen = {}

    def score_instead_of_training(self, resume_from_checkpoint=None):
        inputs = [self.train_dataset[i] for i in range(len(COMPLETIONS))]
        prompts = [x["prompt"] for x in inputs]
        completions = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
        per_func = self._calculate_rewards(inputs, prompts, completions, [[0]] * len(inputs))
        weights = self.reward_weights.to(per_func.device)
        seen["names"] = list(self.reward_func_names)
        seen["totals"] = (per_func * weights.unsqueeze(0)).nansum(dim=1).tolist()

    monkeypatch.setattr(GRPOTrainer, "train", score_instead_of_training)
    monkeypatch.setattr(GRPOTrainer, "save_model", lambda self, *a, **k: None)
    monkeypatch.setattr(type(tok), "save_pretrained", lambda self, *a, **k: None)
    train_grpo.train(cfg, plan, rows, model=model, tokenizer=tok, shape=shape)
    return seen


@pytest.mark.parametrize(("case", "overrides", "totals"), ROWS, ids=[r[0] for r in ROWS])
def test_trainer_scores_with_the_configured_reward(
    tmp_path, monkeypatch, tiny, case, overrides, totals
):
    seen = _rewards_through_trainer(tmp_path, monkeypatch, tiny, overrides)
    assert seen["names"] == ["format", "type", "attribute", "value"]
    assert seen["totals"] == pytest.approx(totals, rel=1e-6)


def test_self_certainty_joins_the_rewards_only_with_a_weight():
    cfg = GRPORunConfig(model="m", data="d", self_certainty_weight=0.0)
    assert [f.__name__ for f in train_grpo.build_rewards(cfg)] == [
        "format",
        "type",
        "attribute",
        "value",
    ]
    weighted = GRPORunConfig(model="m", data="d", self_certainty_weight=0.01)
    funcs = train_grpo.build_rewards(weighted)
    assert len(funcs) == 5 and hasattr(funcs[-1], "bind")
    rc = train_grpo.reward_config(
        GRPORunConfig(model="m", data="d", dars=7.0, rouge_threshold=0.6, binary_reward=True)
    )
    assert (rc.dars, rc.threshold, rc.binary, rc.alpha) == (7.0, 0.6, True, 0.0)
