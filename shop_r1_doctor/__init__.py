"""shop-r1 doctor: probes -> facts (snapshot) -> checks -> findings -> renderers.

Nothing here imports torch, transformers, vllm or ray at module level: the doctor must
run in the broken environments it diagnoses.
"""

__version__ = "0.1.0"
