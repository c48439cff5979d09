"""The run's TRL config (shop_r1/trl_config.py): TRL's own class with the task fields;
the plan's decisions reach TRL's fields, shop-r1's "auto" values never do."""

from __future__ import annotations

import pytest

from shop_r1.autoconfig import AutoPlan
from shop_r1.config import load_config, parse_set

pytest.importorskip("trl")


def _built(command: str, sets: list[str], plan: AutoPlan):
    from shop_r1 import trl_config
    from shop_r1.config import CONFIG_CLASSES

    cfg, _ = load_config(command, flags=parse_set(sets, CONFIG_CLASSES[command]))
    return trl_config.build(cfg, plan).validate()


def test_a_field_under_trl_name_gets_the_plan_or_trls_default_never_auto():
    from trl import GRPOConfig, SFTConfig

    plan = AutoPlan(micro_batch_size=4, gradient_accumulation_steps=16, optim="adamw_torch")
    sft = _built("sft", ["packing=on", "report_to=none"], plan)
    assert isinstance(sft, SFTConfig)
    # shop-r1 packs its own bins: TRL's packing stays off whatever `packing` says
    assert sft.packing is False and sft.padding_free is False
    assert (sft.per_device_train_batch_size, sft.gradient_accumulation_steps) == (4, 16)
    assert sft.optim == "adamw_torch" and sft.report_to == []
    assert sft.completion_only_loss is True and sft.max_length == 4096
    grpo = _built("grpo", ["use_vllm=off", "report_to=none"], AutoPlan(generation_batch_size=64))
    assert isinstance(grpo, GRPOConfig)
    # vLLM off: its fields hold TRL's defaults, not "auto"
    assert grpo.use_vllm is False and grpo.vllm_mode == "colocate"
    assert grpo.vllm_gpu_memory_utilization == 0.3 and grpo.generation_batch_size == 64


def test_a_trl_field_the_user_set_wins_over_the_plan_and_is_what_the_runplan_reads():
    plan = AutoPlan(micro_batch_size=2, gradient_accumulation_steps=32)
    args = _built("sft", ["save_strategy=epoch", "torch_compile=true", "report_to=none"], plan)
    assert args.save_strategy == "epoch" and args.torch_compile is True
    settings = args.settings()
    assert settings["torch_compile"] is True and settings["per_device_train_batch_size"] == 2
    # a TRL field nobody chose is not in the settings (the RunPlan leaves it unset)
    assert "fsdp" not in settings and "top_p" not in settings


def test_the_users_trl_fields_survive_a_copy_with_changes(tmp_path):
    # `train` swaps in the resolved model path and Ray the worker count with
    # dataclasses.replace: the user's TRL fields still win over the plan after it
    import dataclasses

    from shop_r1 import trl_config

    path = tmp_path / "c.yaml"
    path.write_text("padding_free: false\nreport_to: none\n")
    cfg, _ = load_config("sft", yaml_path=path)
    moved = dataclasses.replace(cfg, model="/abs/model")
    args = trl_config.build(moved, AutoPlan(padding_free=True)).validate()
    assert args.padding_free is False and "padding_free" in args.settings()


@pytest.mark.parametrize("command", ["sft", "grpo"])
def test_no_trl_field_keeps_a_shop_r1_switch_value(command):
    import dataclasses

    from trl import GRPOConfig, SFTConfig

    plan = AutoPlan(micro_batch_size=2, gradient_accumulation_steps=32, generation_batch_size=64)
    args = _built(command, ["report_to=none"], plan)
    trl_cls = SFTConfig if command == "sft" else GRPOConfig
    switches = {"auto", "on", "off"}
    left = [
        f.name
        for f in dataclasses.fields(trl_cls)
        if isinstance(getattr(args, f.name), str) and getattr(args, f.name) in switches
    ]
    assert left == []
