"""A profile's stack into a new virtual environment (or an Apptainer image), and the one
ordered plan of fixes the doctor proposes for an existing one.

Both read the same decisions: which torch build the machine's GPUs *and* driver can run
(`torch_index`), and the order that keeps vLLM from swapping torch (`install`).
"""
