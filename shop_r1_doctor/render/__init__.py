"""Renderers: a Diagnosis to text. They never probe; they only read the report."""
