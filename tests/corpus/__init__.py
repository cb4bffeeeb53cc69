"""A corpus of notebook cells run under ipykernel and pyrelune (see cells.py, compare.py)."""
