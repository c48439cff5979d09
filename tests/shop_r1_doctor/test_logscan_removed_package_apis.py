"""Package APIs a release removed, read from the names the calling code asks for:
accelerate 1.0's dataloader keywords of Accelerator, transformers 5's tokenizer methods
(worded by its tokenizer __getattr__), and a float32 input with half-precision cos/sin in
flash-attn's rotary kernel (a model's code of some transformers releases). Each on the
framework's own wording and on a pasted shape, with a near miss that must not be read.
Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

SKEW = "PACKAGE_VERSION_SKEW"

# --- accelerate 1.0 removed dispatch_batches / even_batches / use_seedable_sampler --------


@pytest.mark.parametrize("keyword", ["dispatch_batches", "even_batches", "use_seedable_sampler"])
def test_accelerate_1_removed_keyword_is_skew(keyword):
    log = f"TypeError: Accelerator.__init__() got an unexpected keyword argument '{keyword}'"
    assert lead(log) == (SKEW, "warning")


def test_a_projects_trainer_building_its_own_accelerator_is_skew():
    # the last frame is the project's trainer subclass, not a package's
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/LLaVA-NeXT/llava/train/train.py", line 1704, in train\n'
        "    trainer = LLaVATrainer(model=model, tokenizer=tokenizer, args=training_args)\n"
        '  File "/home/u/env/lib/python3.10/site-packages/transformers/trainer.py", line 376, in __init__\n'
        "    self.create_accelerator_and_postprocess()\n"
        '  File "/home/u/LLaVA-NeXT/llava/train/llava_trainer.py", line 251, in create_accelerator_and_postprocess\n'
        "    self.accelerator = Accelerator(\n"
        "TypeError: Accelerator.__init__() got an unexpected keyword argument 'dispatch_batches'\n"
    )
    assert lead(log) == (SKEW, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a keyword no accelerate release took (misspelt)
        "TypeError: Accelerator.__init__() got an unexpected keyword argument 'dispatch_batch'",
        # a user's wrong keyword to a TRL class: the user's own call, not a release's
        "TypeError: GRPOTrainer.__init__() got an unexpected keyword argument 'reward_function'",
        # the same keyword on a user's own class of another name
        "TypeError: MyAccelerator.__init__() got an unexpected keyword argument 'dispatch_batches'",
    ],
)
def test_other_unknown_keywords_are_not_skew(log):
    assert SKEW not in codes(log)


# --- transformers 5 removed batch_encode_plus, encode_plus, as_target_tokenizer ... --------


@pytest.mark.parametrize(
    "log",
    [
        # transformers 5.24's __getattr__ (tokenization_utils_base.py:1344), no suggestion
        "AttributeError: Qwen2Tokenizer has no attribute encode_plus",
        # Python 3.12+'s suggestion appended
        "AttributeError: BertTokenizer has no attribute batch_encode_plus. Did you mean: '_encode_plus'?",
        "AttributeError: T5Tokenizer has no attribute as_target_tokenizer",
    ],
)
def test_transformers5_removed_tokenizer_method_is_skew(log):
    assert lead(log) == (SKEW, "warning")


def test_a_package_calling_batch_encode_plus_under_transformers5_is_skew():
    log = (
        '"File <my_script>, line XY, in <module>\n'
        "    result = model.predict_sentiment(texts)\n"
        '  File ".../python3.13/site-packages/germansentiment/sentimentmodel.py", line 25, in predict_sentiment\n'
        '    encoded = self.tokenizer.batch_encode_plus(texts,padding=True, return_tensors="pt")\n'
        "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File ".../lib/python3.13/site-packages/transformers/tokenization_utils_base.py", line 1291, in __getattr__\n'
        '    raise AttributeError(f"{self.__class__.__name__} has no attribute {key}")\n'
        "AttributeError: BertTokenizer has no attribute batch_encode_plus. Did you mean: '_encode_plus'?\"\n"
    )
    assert lead(log) == (SKEW, "warning")


@pytest.mark.parametrize(
    "log",
    [
        # the same __getattr__ on an attribute transformers 4 did not define either
        "AttributeError: BertTokenizer has no attribute sp_model",
        # a misspelt method name
        "AttributeError: BertTokenizer has no attribute batch_encode_plusses",
        # CPython's own wording on a user's object
        "AttributeError: 'Encoder' object has no attribute 'encode_plus'",
    ],
)
def test_other_missing_tokenizer_attributes_are_not_skew(log):
    assert SKEW not in codes(log)


# --- flash-attn's rotary kernel handed a float32 input with half cos/sin -------------------


@pytest.mark.parametrize(
    "log",
    [
        # flash-attn 2.7.4's assert as printed
        "AssertionError: Input and cos/sin must have the same dtype, got torch.float32 and torch.bfloat16",
        # a rank-prefixed paste of the last frame
        '[rank0]:   File "/usr/local/lib/python3.10/dist-packages/flash_attn/ops/triton/rotary.py", line 176, in apply_rotary\n'
        "[rank0]:     x.dtype == cos.dtype\n"
        "[rank0]: AssertionError: Input and cos/sin must have the same dtype, got torch.float32 and torch.bfloat16\n",
    ],
)
def test_float32_input_with_half_cos_sin_is_a_skew_hint(log):
    assert lead(log) == (SKEW, "info")


def test_fp16_input_with_bf16_cos_sin_is_not_skew():
    # an fp16 model with bf16 rotary tables: the run's own dtype settings
    log = "AssertionError: Input and cos/sin must have the same dtype, got torch.float16 and torch.bfloat16"
    assert SKEW not in codes(log)
