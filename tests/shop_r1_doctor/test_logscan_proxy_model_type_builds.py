"""Readings learned from held-out batch 13, on text shapes beyond the batch's own pastes:
a request to the machine's own server answered by an HTTP proxy, a checkpoint newer than
the installed transformers, vLLM's registry failing to inspect a model class, DeepSpeed's
op pre-compilation without torch in pip's isolated build. Codes and severities only
(wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

# --- LOCAL_REQUEST_VIA_PROXY --------------------------------------------------------------

SQUID_PAGE = (
    "<title>ERROR: The requested URL could not be retrieved</title>\n"
    "<p>Generated Tue, 04 Mar 2025 10:01:02 GMT by proxy.corp (squid/5.7)</p>"
)


@pytest.mark.parametrize(
    "log",
    [
        # a TRL client polling its vLLM server through Squid
        "requests.get('http://127.0.0.1:8000/health/')\n" + SQUID_PAGE,
        # Apache mod_proxy's page for a local OpenAI-style endpoint
        "POST http://localhost:30000/v1/completions -> 502\n"
        "<title>502 Proxy Error</title>\nThe proxy server received an invalid response from an "
        "upstream server.",
        # requests' own ProxyError naming the loopback host
        "requests.exceptions.ProxyError: HTTPConnectionPool(host='127.0.0.1', port=8000): Max "
        "retries exceeded with url: /health/ (Caused by ProxyError('Unable to connect to proxy', "
        "OSError('Tunnel connection failed: 403 Forbidden')))",
        # a proxy that wants credentials, on the server's own warm-up
        '  File "sglang/srt/entrypoints/http_server.py", line 548, in _wait_and_warmup\n'
        "AssertionError: res=<Response [407]>, res.text='<html><head><title>407 Proxy "
        "Authentication Required</title>",
    ],
)
def test_a_proxy_answering_a_local_request_is_an_error(log):
    assert readings(log)[0] == ("LOCAL_REQUEST_VIA_PROXY", "error")


def test_a_proxy_page_with_no_local_request_is_only_a_hint():
    # a hub download through a broken corporate proxy prints the same page
    log = "GET https://huggingface.co/api/models/Qwen/Qwen2.5-0.5B\n" + SQUID_PAGE
    assert readings(log)[0] == ("LOCAL_REQUEST_VIA_PROXY", "info")


def test_a_bare_bad_gateway_on_a_local_request_is_a_hint():
    log = (
        '  File "sglang/srt/entrypoints/http_server.py", line 548, in _wait_and_warmup\n'
        "AssertionError: res=<Response [502]>, res.text=''"
    )
    assert readings(log)[0] == ("LOCAL_REQUEST_VIA_PROXY", "info")


@pytest.mark.parametrize(
    "log",
    [
        # a 502 from the Hub, not from this machine
        "huggingface_hub.errors.HfHubHTTPError: 502 Server Error: Bad Gateway for url: "
        "https://huggingface.co/api/models/x",
        # localhost named, but no proxy and no error status
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
        "ConnectionRefusedError: [Errno 111] Connection refused",
        # the words of a bind address in a MASTER_ADDR, no HTTP request
        "MASTER_ADDR=localhost MASTER_PORT=29500\n<Response [200]>",
    ],
)
def test_no_proxy_reading_without_a_proxy_page_or_a_local_bad_gateway(log):
    assert "LOCAL_REQUEST_VIA_PROXY" not in [code for code, _ in readings(log)]


# --- TRANSFORMERS_TOO_OLD_FOR_MODEL -------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        # transformers 4.4x's ValueError with its upgrade advice, another model type
        "ValueError: The checkpoint you are trying to load has model type `gemma3` but "
        "Transformers does not recognize this architecture. This could be because of an issue "
        "with the checkpoint, or because your version of Transformers is out of date.\n\n"
        "You can update Transformers with the command `pip install --upgrade transformers`.",
        # a dotted/hyphenated model type
        "ValueError: The checkpoint you are trying to load has model type `deepseek_v3` but "
        "Transformers does not recognize this architecture.",
        # transformers before 4.31: CONFIG_MAPPING's KeyError
        '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/auto/'
        'configuration_auto.py", line 1039, in from_pretrained\n'
        '    config_class = CONFIG_MAPPING[config_dict["model_type"]]\n'
        '  File "/opt/conda/lib/python3.10/site-packages/transformers/models/auto/'
        'configuration_auto.py", line 734, in __getitem__\n'
        "    raise KeyError(key)\n"
        "KeyError: 'qwen2'",
    ],
)
def test_a_model_type_transformers_does_not_know_is_a_warning(log):
    assert readings(log)[0] == ("TRANSFORMERS_TOO_OLD_FOR_MODEL", "warning")


def test_a_keyerror_outside_autoconfig_is_not_a_model_type():
    log = (
        '  File "/x/site-packages/transformers/tokenization_utils_base.py", line 250, in '
        "__getitem__\n    return self.data[item]\nKeyError: 'input_ids'"
    )
    assert "TRANSFORMERS_TOO_OLD_FOR_MODEL" not in [code for code, _ in readings(log)]


# --- vLLM's registry: failed to be inspected -----------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: Model architectures ['Gemma3ForConditionalGeneration'] failed to be "
        "inspected. Please check the logs for more details.",
        "(EngineCore_DP0 pid=8123) ValueError: Model architectures ['LlavaForConditionalGeneration', "
        "'MllamaForConditionalGeneration'] failed to be inspected. Please check the logs for more "
        "details.",
    ],
)
def test_a_model_class_vllm_could_not_inspect_is_a_skew_hint(log):
    assert readings(log)[0] == ("PACKAGE_VERSION_SKEW", "info")


def test_an_architecture_vllm_does_not_have_is_not_read_as_skew():
    log = (
        "ValueError: Model architectures ['FooForCausalLM'] are not supported for now. "
        "Supported architectures: dict_keys(['LlamaForCausalLM'])"
    )
    assert "PACKAGE_VERSION_SKEW" not in [code for code, _ in readings(log)]


# --- FA_BUILD_ISOLATION_NO_TORCH (DeepSpeed) -----------------------------------------------

DS_WARNING = (
    "[WARNING] Unable to import torch, pre-compiling ops will be disabled. Please visit "
    "https://pytorch.org/ to see how to properly install torch on your system.\n"
)


@pytest.mark.parametrize(
    "log",
    [
        # uv's build, one op asked for, setup.py's per-op assert (its warning cut off)
        "Building deepspeed==0.16.4\n"
        "AssertionError: Unable to pre-compile fused_adam, please first install torch\n"
        "The build backend returned an error",
        # pip's PEP 517 hook with the assert pasted and the warning cut off
        '  File "/tmp/pip-build-env-3k2/overlay/lib/python3.11/site-packages/setuptools/'
        'build_meta.py", line 325, in get_requires_for_build_wheel\n'
        "AssertionError: Unable to pre-compile ops without torch installed. Please install torch "
        "before attempting to pre-compile ops.",
    ],
)
def test_deepspeed_ops_without_torch_in_an_isolated_build_is_the_isolation(log):
    assert readings(log)[0] == ("FA_BUILD_ISOLATION_NO_TORCH", "error")


def test_deepspeeds_warning_alone_is_no_failure():
    # without DS_BUILD_OPS the ops JIT-compile later; the build goes on and succeeds
    log = (
        "Getting requirements to build wheel ... done\n"
        + DS_WARNING
        + ("Successfully installed deepspeed-0.16.4")
    )
    assert "FA_BUILD_ISOLATION_NO_TORCH" not in [code for code, _ in readings(log)]
