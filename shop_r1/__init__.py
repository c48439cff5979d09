"""shop_r1: the Shop-R1 task (data, parser, rewards, metrics) and its trainer.

Top-level import is light; torch/transformers/trl load only where training needs them.
"""

__version__ = "0.1.0"
