"""Tokenizer code written for transformers < 4.34, xformers refusing bfloat16 below Ampere,
bitsandbytes' failed CUDA setup, a connection to the Hub that could not be opened and
torch's Windows host allocator: each reading on the framework's own message and on the
shapes real pastes take, with a near miss it must not read. Codes and severities only
(wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, readings

# --- tokenizer code older than transformers (PACKAGE_VERSION_SKEW) ---------------------------

REMOTE_TOKENIZER_TRACEBACK = """\
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/root/miniconda3/lib/python3.8/site-packages/transformers/models/auto/tokenization_auto.py", line 738, in from_pretrained
    return tokenizer_class.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)
  File "/root/miniconda3/lib/python3.8/site-packages/transformers/tokenization_utils_base.py", line 2256, in _from_pretrained
    tokenizer = cls(*init_inputs, **init_kwargs)
  File "/root/.cache/huggingface/modules/transformers_modules/internlm-chat-7b/tokenization_internlm.py", line 68, in __init__
    super().__init__(
  File "/root/miniconda3/lib/python3.8/site-packages/transformers/tokenization_utils.py", line 366, in __init__
    self._add_tokens(self.all_special_tokens_extended, special_tokens=True)
  File "/root/miniconda3/lib/python3.8/site-packages/transformers/tokenization_utils.py", line 462, in _add_tokens
    current_vocab = self.get_vocab().copy()
  File "/root/.cache/huggingface/modules/transformers_modules/internlm-chat-7b/tokenization_internlm.py", line 114, in get_vocab
    vocab = {self.convert_ids_to_tokens(i): i for i in range(self.vocab_size)}
  File "/root/.cache/huggingface/modules/transformers_modules/internlm-chat-7b/tokenization_internlm.py", line 102, in vocab_size
    return self.sp_model.get_piece_size()
AttributeError: 'InternLMTokenizer' object has no attribute 'sp_model'
"""

# a project's own copy of a model's tokenizer (not under transformers_modules), Windows paths
LOCAL_COPY_TRACEBACK = """\
  File "C:\\work\\baby-llama2\\chatglm_tokenizer\\tokenization_chatglm.py", line 68, in __init__
    super().__init__(padding_side=padding_side, **kwargs)
  File "C:\\Users\\me\\miniconda3\\lib\\site-packages\\transformers\\tokenization_utils.py", line 436, in __init__
    self._add_tokens(
  File "C:\\Users\\me\\miniconda3\\lib\\site-packages\\transformers\\tokenization_utils.py", line 544, in _add_tokens
    current_vocab = self.get_vocab().copy()
  File "C:\\work\\baby-llama2\\chatglm_tokenizer\\tokenization_chatglm.py", line 106, in vocab_size
    return self.tokenizer.n_words
           ^^^^^^^^^^^^^^
AttributeError: 'ChatGLMTokenizer' object has no attribute 'tokenizer'. Did you mean: 'tokenize'?
"""


@pytest.mark.parametrize("log", [REMOTE_TOKENIZER_TRACEBACK, LOCAL_COPY_TRACEBACK])
def test_tokenizer_failing_on_its_own_attribute_under_init_is_a_version_skew(log):
    assert readings(log)[0] == ("PACKAGE_VERSION_SKEW", "warning")


@pytest.mark.parametrize(
    "line",
    [
        "AttributeError: 'BaichuanTokenizer' object has no attribute 'sp_model'",
        "**报错 “AttributeError: 'ChatGLMTokenizer' object has no attribute 'tokenizer'”**",
        "AttributeError: 'ChatGLMTokenizer' object has no attribute 'sp_tokenizer'. Did you mean: '_tokenize'?",
    ],
)
def test_a_tokenizer_without_its_sentencepiece_attribute_is_a_hint(line):
    assert readings(line)[0] == ("PACKAGE_VERSION_SKEW", "info")


@pytest.mark.parametrize(
    "log",
    [
        # a fast tokenizer has no SentencePiece model: the caller asked the wrong class
        "AttributeError: 'LlamaTokenizerFast' object has no attribute 'sp_model'",
        # a method the user's code calls that the class never had
        "AttributeError: 'ChatGLMTokenizer' object has no attribute 'build_prompt'",
        # a trainer, not a tokenizer (a trainer's `tokenizer`, gone from transformers'
        # Trainer after 4.4x, is the trainer-attribute skew reading instead)
        "AttributeError: 'GRPOTrainer' object has no attribute 'sp_model'",
        # the same frames, but the failing object is no tokenizer
        REMOTE_TOKENIZER_TRACEBACK.replace("'InternLMTokenizer' object", "'NoneType' object"),
    ],
)
def test_other_missing_attributes_are_not_tokenizer_skew(log):
    assert "PACKAGE_VERSION_SKEW" not in codes(log)


def test_init_traceback_ending_in_transformers_own_frame_is_only_the_hint():
    # transformers' own tokenizer class failing under __init__ is not code written for an
    # older transformers: at most the one-line hint reads it
    log = REMOTE_TOKENIZER_TRACEBACK.replace(
        'transformers_modules/internlm-chat-7b/tokenization_internlm.py", line 102',
        'transformers/models/llama/tokenization_llama.py", line 102',
    )
    assert readings(log)[0] == ("PACKAGE_VERSION_SKEW", "info")


# --- xformers: no bfloat16 kernel below Ampere (BF16_PRE_AMPERE) ------------------------------

XFORMERS_HEAD = """\
NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:
     query       : shape=(7, 729, 16, 72) (torch.bfloat16)
     key         : shape=(7, 729, 16, 72) (torch.bfloat16)
     value       : shape=(7, 729, 16, 72) (torch.bfloat16)
     attn_bias   : <class 'NoneType'>
     p           : 0.0
"""

XFORMERS_BF16_CC75 = (
    XFORMERS_HEAD
    + """\
`fa2F@v2.7.2.post1` is not supported because:
    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)
    bf16 is only supported on A100+ GPUs
`cutlassF-pt` is not supported because:
    bf16 is only supported on A100+ GPUs
"""
)


@pytest.mark.parametrize(
    "log",
    [
        XFORMERS_BF16_CC75,
        # the backward pass, one operator, behind a log prefix
        "[rank0]: NotImplementedError: No operator found for `memory_efficient_attention_backward`"
        " with inputs:\n[rank0]:      query       : shape=(1, 1024, 16, 64) (torch.bfloat16)\n"
        "[rank0]: `cutlassB` is not supported because:\n"
        "[rank0]:     bf16 is only supported on A100+ GPUs\n",
    ],
)
def test_xformers_refusing_bf16_is_bf16_below_ampere(log):
    assert readings(log)[0] == ("BF16_PRE_AMPERE", "error")


@pytest.mark.parametrize(
    "log",
    [
        # fp16 on the same GPU: flash refuses the capability, no bf16 reason
        XFORMERS_HEAD.replace("bfloat16", "float16")
        + "`fa2F@v2.7.2.post1` is not supported because:\n"
        "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)\n"
        "`cutlassF-pt` is not supported because:\n    attn_bias type is <class 'torch.Tensor'>\n",
        # a build without CUDA prints the bf16 reason too
        XFORMERS_HEAD + "`cutlassF-pt` is not supported because:\n"
        "    xFormers wasn't build with CUDA support\n    bf16 is only supported on A100+ GPUs\n",
        # tensors on the CPU: the bf16 reason is printed whatever the GPU
        XFORMERS_HEAD + "`cutlassF-pt` is not supported because:\n"
        "    device=cpu (supported: {'cuda'})\n    bf16 is only supported on A100+ GPUs\n",
    ],
)
def test_other_xformers_refusals_are_not_bf16_below_ampere(log):
    found = codes(log)
    assert "BF16_PRE_AMPERE" not in found
    assert found[0] == "XFORMERS_WHEEL_MISMATCH"


# --- bitsandbytes 0.36-0.42: CUDA setup failed (BNB_NO_CUDA_BINARY) ---------------------------

# bitsandbytes prints a bare `RuntimeError: ` line, then its indented message
BNB_037 = (
    "RuntimeError: \n"
    "        CUDA Setup failed despite GPU being available. Inspect the CUDA SETUP outputs above"
    " to fix your environment!\n"
    "        If you cannot find any issues and suspect a bug, please open an issue with detals"
    " about your environment:\n"
    "        https://github.com/TimDettmers/bitsandbytes/issues\n"
)

BNB_042_WINDOWS = """\
  File "C:\\Users\\me\\ChatGLM-Tuning\\finetune.py", line 9, in <module>
    import bitsandbytes as bnb
  File "C:\\Users\\me\\miniconda3\\lib\\site-packages\\bitsandbytes\\cextension.py", line 20, in <module>
    raise RuntimeError('''
RuntimeError:
        CUDA Setup failed despite GPU being available. Please run the following command to get more information:

        python -m bitsandbytes
"""


def test_bnb_cuda_setup_failed_is_a_missing_native_library_hint():
    assert readings(BNB_037)[0] == ("BNB_NO_CUDA_BINARY", "warning")


def test_bnb_cuda_setup_failed_on_windows_is_the_missing_windows_library():
    assert readings(BNB_042_WINDOWS)[0] == ("BNB_NO_CUDA_BINARY", "error")


def test_other_cuda_setup_failures_are_not_bitsandbytes():
    for log in (
        "RuntimeError: CUDA Setup failed. Please check your driver.",
        "ERROR: CUDA setup failed despite GPU being present (vendor tool)",
    ):
        assert "BNB_NO_CUDA_BINARY" not in codes(log)


# --- the Hub's host could not be connected to (HF_HUB_UNREACHABLE) ----------------------------


@pytest.mark.parametrize(
    "log",
    [
        # urllib3's ConnectTimeoutError as requests passes it on (a Windows object address)
        "urllib3.exceptions.ConnectTimeoutError: (<urllib3.connection.HTTPSConnection object at"
        " 0x000001A8E2C2FC40>, 'Connection to huggingface.co timed out. (connect timeout=1)')",
        # MaxRetryError around a refused or unreachable connection
        "requests.exceptions.ConnectionError: (MaxRetryError(\"HTTPSConnectionPool(host='huggingface.co',"
        " port=443): Max retries exceeded with url: /bert-base-uncased/resolve/main/config.json"
        " (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f>:"
        " Failed to establish a new connection: [Errno 101] Network is unreachable'))\"),"
        " '(Request ID: 1c2d)')",
        # DNS, to the CDN host
        "urllib3.exceptions.NameResolutionError: <urllib3.connection.HTTPSConnection object at"
        " 0x7f3a>: Failed to resolve 'cdn-lfs.huggingface.co' ([Errno -3] Temporary failure in"
        " name resolution)",
        # the mirror itself unreachable
        "HTTPSConnectionPool(host='hf-mirror.com', port=443): Max retries exceeded with url:"
        " /api/models/Qwen/Qwen2.5-7B (Caused by ConnectTimeoutError(<urllib3.connection."
        "HTTPSConnection object at 0x7f>, 'Connection to hf-mirror.com timed out. (connect timeout=10)'))",
    ],
)
def test_no_connection_to_the_hub_is_a_hint_the_hub_is_unreachable(log):
    assert readings(log)[0] == ("HF_HUB_UNREACHABLE", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # another host: pip's index, a tracker
        "urllib3.exceptions.ConnectTimeoutError: (<urllib3.connection.HTTPSConnection object at"
        " 0x7f>, 'Connection to api.wandb.ai timed out. (connect timeout=20)')",
        "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple/"
        " (Caused by NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object>:"
        " Failed to establish a new connection: [Errno 111] Connection refused'))",
        # a name that only starts like the Hub's
        "Failed to resolve 'huggingface.co.internal.example' ([Errno -2] Name or service not known)",
    ],
)
def test_connect_failures_to_other_hosts_are_not_the_hub(log):
    assert "HF_HUB_UNREACHABLE" not in codes(log)


def test_a_read_timeout_from_the_hub_is_not_a_refused_connection():
    log = (
        "HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url:"
        ' /x/resolve/main/model.safetensors (Caused by ReadTimeoutError("HTTPSConnectionPool('
        "host='huggingface.co', port=443): Read timed out. (read timeout=10)\"))"
    )
    assert readings(log)[0][0] == "HF_DOWNLOAD_TIMEOUT"


# --- torch's Windows host allocator (WIN_PAGING_FILE_TOO_SMALL) -------------------------------


def test_windows_allocator_wrapped_over_lines_is_the_commit_limit():
    log = (
        "RuntimeError: [enforce fail at\n"
        "C:\\actions-runner\\_work\\pytorch\\pytorch\\builder\\windows\\pytorch\\c10\\core\\impl"
        "\\alloc_cpu.cpp:72] data.\n"
        "DefaultCPUAllocator: not enough memory: you tried to allocate 1069285376 bytes.\n"
    )
    assert readings(log)[0] == ("WIN_PAGING_FILE_TOO_SMALL", "warning")


def test_linux_allocator_refusal_is_not_the_windows_commit_limit():
    log = (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't"
        " allocate memory: you tried to allocate 3013607424 bytes. Error code 12 (Cannot allocate"
        " memory)"
    )
    found = codes(log)
    assert "WIN_PAGING_FILE_TOO_SMALL" not in found
    assert found[0] == "ADDRESS_SPACE_LIMIT"
