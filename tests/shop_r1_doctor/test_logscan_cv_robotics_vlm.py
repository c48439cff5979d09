"""Readings of computer-vision, robotics-simulation and vision-language stacks: source builds
of torch extensions cut short, OpenMMLab's version gates, a package's compiled module never
built, headless rendering without a backend, libpython, the Hub's bare 401, gym's step/reset
API change and LLaVA's hidden import error. Codes and severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import codes, lead

# --- a source build whose setup.py imports torch, the paste cut before the error line ---

DETECTRON2_CUT = """\
 > [stage-0 39/44] RUN pip install -e ./src/detectron2:
0.934 Obtaining file:///app/src/detectron2
0.936   Installing build dependencies: started
2.550   Installing build dependencies: finished with status 'done'
2.807   Getting requirements to build editable: started
2.936   Getting requirements to build editable: finished with status 'error'
2.942   error: subprocess-exited-with-error
2.942   × Getting requirements to build editable did not run successfully.
2.942   │ exit code: 1
2.942   ╰─> [23 lines of output]
2.942       Traceback (most recent call last):
"""

UV_FLASH_ATTN = """\
$ uv pip install flash-attn==2.8.3
Resolved 1 package in 80ms
  × Failed to build `flash-attn==2.8.3`
  ├─▶ The build backend returned an error
  ╰─▶ Call to `setuptools.build_meta:__legacy__.get_requires_for_build_wheel` failed (exit status: 1)
"""


@pytest.mark.parametrize("text", [DETECTRON2_CUT, UV_FLASH_ATTN])
def test_failed_requirements_hook_of_a_torch_importing_setup_is_a_hint(text):
    assert lead(text) == ("FA_BUILD_ISOLATION_NO_TORCH", "info")


def test_the_missing_torch_shown_stays_the_error_reading():
    text = DETECTRON2_CUT + "2.942       ModuleNotFoundError: No module named 'torch'\n"
    assert lead(text) == ("FA_BUILD_ISOLATION_NO_TORCH", "error")


@pytest.mark.parametrize(
    "text",
    [
        # a package whose setup.py does not import torch
        DETECTRON2_CUT.replace("detectron2", "pdf_layout_tools"),
        # the hook's own error is shown and is not the missing torch
        DETECTRON2_CUT + "2.942       OSError: CUDA_HOME environment variable is not set.\n",
        # the package named, its build fine
        "Obtaining file:///app/src/detectron2\n  Getting requirements to build editable: "
        "finished with status 'done'\nSuccessfully installed detectron2-0.6\n",
    ],
)
def test_other_build_failures_are_not_the_isolated_torch(text):
    assert "FA_BUILD_ISOLATION_NO_TORCH" not in codes(text)


# --- OpenMMLab's import-time version gates ---


@pytest.mark.parametrize(
    "text",
    [
        '  File "/mnt/e/mmdetection/mmdet/__init__.py", line 17, in <module>\n'
        "AssertionError: MMCV==2.2.0 is used but incompatible. Please install mmcv>=2.0.0rc4,"
        " <2.2.0.",
        # an issue's title line
        "[Bug] AssertionError: MMCV==2.2.0 is used but incompatible. Please install"
        " mmcv>=2.0.0rc4, <2.2.0.",
        "AssertionError: MMEngine==0.6.0 is used but incompatible. Please install"
        " mmengine>=0.7.1, <1.0.0.",
        # mmdet3d's gate on mmdet, mmdet 2.x's inclusive cap, mmseg's floor alone
        "AssertionError: MMDET==3.3.0 is used but incompatible. Please install mmdet>=3.0.0,"
        " <3.3.0.",
        "AssertionError: MMCV==1.2.4 is used but incompatible. Please install mmcv>=1.3.17,"
        " <=1.8.0.",
        "AssertionError: MMCV==2.2.0 is used but incompatible. Please install mmcv>=2.0.0rc4.",
    ],
)
def test_openmmlab_refusing_the_installed_mmcv_is_version_skew(text):
    assert lead(text) == ("PACKAGE_VERSION_SKEW", "warning")


@pytest.mark.parametrize(
    "text",
    [
        "mmcv 2.2.0 is used with mmdet 3.3.0",
        "AssertionError: Please install mmcv>=2.0.0rc4, <2.2.0.",
        "MMCV==2.1.0 is used; OK",
    ],
)
def test_other_mmcv_lines_are_no_version_gate(text):
    assert "PACKAGE_VERSION_SKEW" not in codes(text)


# --- a package's own compiled module missing ---


@pytest.mark.parametrize(
    "text",
    [
        "cannot import name '_C' from 'sam2'",
        "ImportError: cannot import name '_C' from 'sam2' (/opt/sam2/sam2/__init__.py)",
        "ModuleNotFoundError: No module named 'groundingdino._C'",
        "ModuleNotFoundError: No module named 'mmcv._ext'",
        "ModuleNotFoundError: No module named 'pytorch3d._C'",
        "UserWarning: Failed to load custom C++ ops. Running on CPU mode Only!\n"
        "NameError: name '_C' is not defined",
    ],
)
def test_a_package_own_compiled_module_missing_is_ops_not_built(text):
    assert lead(text) == ("EXT_OPS_NOT_BUILT", "error")


@pytest.mark.parametrize(
    "text",
    [
        "ModuleNotFoundError: No module named 'torch._C'",
        "ImportError: cannot import name '_C' from 'torch' (unknown location)",
        "ModuleNotFoundError: No module named 'vllm._C'",
        "ImportError: cannot import name '_Config' from 'sam2'",
        "ModuleNotFoundError: No module named 'mmcv.ext'",
    ],
)
def test_other_missing_modules_are_not_ops_not_built(text):
    assert "EXT_OPS_NOT_BUILT" not in codes(text)


def test_a_source_checkout_without_its_build_leads_over_ops_not_built():
    text = (
        '  File "/home/u/GroundingDINO/groundingdino/models/ms_deform_attn.py", line 28, in'
        " <module>\n    from groundingdino import _C\n"
        "ModuleNotFoundError: No module named 'groundingdino._C'"
    )
    assert codes(text)[0] == "MODULE_SHADOWED_BY_LOCAL_FILE"
    assert "EXT_OPS_NOT_BUILT" in codes(text)


# --- headless rendering without a backend ---


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: Cannot initialize a EGL device display. This likely means that your EGL"
        " driver does not support the PLATFORM_DEVICE extension, which is required for creating"
        " a headless rendering context.",
        "ImportError: Cannot use EGL rendering platform. The PYOPENGL_PLATFORM environment"
        " variable is set to 'osmesa' (should be either unset or 'egl').",
        "glfw.GLFWError: (65544) b'X11: The DISPLAY environment variable is missing'\n"
        "mujoco.FatalError: gladLoadGL error",
        '  File "/envs/dexycb/lib/python3.8/site-packages/sapien/wrapper/scene.py", line 25, in'
        " __init__\n    [sapien.physx.PhysxCpuSystem(), sapien.render.RenderSystem()]\n"
        "RuntimeError: failed to find a rendering device",
        'RuntimeError: Failed to find a supported physical device "cuda:0"',
    ],
)
def test_no_rendering_backend_on_a_headless_machine(text):
    assert lead(text) == ("HEADLESS_RENDERING_UNAVAILABLE", "error")


def test_a_library_the_vulkan_driver_could_not_load_leads():
    text = (
        'RuntimeError: Failed to find a supported physical device "cuda:0"\n'
        "- ERROR: libXext.so.6: cannot open shared object file: No such file or directory\n"
        "- WARNING: terminator_CreateInstance: Failed to CreateInstance in ICD 0. Skipping ICD."
    )
    assert lead(text) == ("SYSTEM_LIB_MISSING", "error")
    assert "HEADLESS_RENDERING_UNAVAILABLE" in codes(text)


@pytest.mark.parametrize(
    "text",
    [
        "export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl",
        "Found rendering device: NVIDIA H800 (cuda:0)",
        "X11 forwarding: DISPLAY=localhost:10.0",
        "RuntimeError: EGL failed to find a framebuffer configuration that matches the desired"
        " attributes",
    ],
)
def test_rendering_words_without_the_failure_are_no_reading(text):
    assert "HEADLESS_RENDERING_UNAVAILABLE" not in codes(text)


# --- the shared libpython ---


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: libpython3.8.so.1.0: cannot open shared object file: No such file or"
        " directory",
        "ImportError: libpython3.7m.so.1.0: cannot open shared object file: No such file or"
        " directory",
    ],
)
def test_the_shared_libpython_missing_is_a_system_library(text):
    assert lead(text) == ("SYSTEM_LIB_MISSING", "error")


@pytest.mark.parametrize(
    "text",
    [
        "\tlibpython3.8.so.1.0 => /usr/lib/x86_64-linux-gnu/libpython3.8.so.1.0",
        "ImportError: libtorch_python.so: cannot open shared object file: No such file or"
        " directory",
    ],
)
def test_libpython_found_or_torch_own_library_is_not_a_system_library(text):
    assert "SYSTEM_LIB_MISSING" not in codes(text)


# --- the Hub's bare 401 ---


def test_a_bare_hub_401_is_a_gated_repo_hint():
    text = (
        "HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/google/"
        "paligemma-3b-pt-224/resolve/main/config.json"
    )
    assert lead(text) == ("HF_GATED_REPO_NO_TOKEN", "info")


@pytest.mark.parametrize(
    "text",
    [
        "HTTPError: 401 Client Error: Unauthorized for url: https://api.wandb.ai/graphql",
        "HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/org/model/"
        "resolve/main/config.json",
    ],
)
def test_other_401s_and_hub_statuses_are_not_the_gated_hint(text):
    assert "HF_GATED_REPO_NO_TOKEN" not in codes(text)


# --- gym 0.26's step/reset API ---

GYM_STEP = """\
ValueError                                Traceback (most recent call last)
Cell In [7], line 8
      7     print(action)
----> 8     observation, reward, done, info = env.step(action)
      9     print(observation)

ValueError: too many values to unpack (expected 4)
"""


@pytest.mark.parametrize(
    "text",
    [
        GYM_STEP,
        '  File "train.py", line 40, in rollout\n'
        "    obs, reward, terminated, truncated, info = self.env.step(action)\n"
        "ValueError: not enough values to unpack (expected 5, got 4)",
        "----> 2     observation, _ = env.reset(seed=seed)\n"
        "      3     reward, terminated, truncated = 0., False, False\n\n"
        "ValueError: too many values to unpack (expected 2)",
    ],
)
def test_unpacking_env_step_or_reset_for_the_other_gym_api_is_skew(text):
    assert lead(text) == ("PACKAGE_VERSION_SKEW", "info")


@pytest.mark.parametrize(
    "text",
    [
        # not an env's step
        GYM_STEP.replace("env.step(action)", "scheduler.step(loss)"),
        # reset's count is 2 in either API, step's 4 or 5
        GYM_STEP.replace("(expected 4)", "(expected 3)"),
        "----> 2     observation, _ = env.reset(seed=seed)\n\n"
        "ValueError: too many values to unpack (expected 3)",
        # the env.step frame is an earlier one; the failing line is the user's own
        '  File "train.py", line 12, in <module>\n    obs, r, done, info = env.step(a)\n'
        '  File "/app/policy.py", line 30, in act\n    a, b, c, d = self.head(x)\n'
        "ValueError: too many values to unpack (expected 4)",
    ],
)
def test_other_unpacking_errors_are_not_gym_skew(text):
    assert "PACKAGE_VERSION_SKEW" not in codes(text)


# --- LLaVA's model classes, their import error hidden ---


def test_llava_model_class_missing_points_to_flash_attn_as_a_hint():
    text = (
        '  File "/home/LLaVA/llava/__init__.py", line 1, in <module>\n'
        "    from .model import LlavaLlamaForCausalLM\n"
        "ImportError: cannot import name 'LlavaLlamaForCausalLM' from 'llava.model'"
        " (/home/LLaVA/llava/model/__init__.py)"
    )
    assert lead(text) == ("FA_TORCH_ABI_UNDEFINED_SYMBOL", "info")


@pytest.mark.parametrize(
    "text",
    [
        "ImportError: cannot import name 'LlavaConfig' from 'llava.model'",
        "ImportError: cannot import name 'LlavaForConditionalGeneration' from 'transformers'",
    ],
)
def test_other_llava_imports_are_not_the_hidden_flash_attn(text):
    assert "FA_TORCH_ABI_UNDEFINED_SYMBOL" not in codes(text)
