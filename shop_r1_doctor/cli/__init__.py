"""The `shop-r1` command line. `main.py` only wires groups; each group has its module."""
