"""JSON Schemas of every protocol message, installed as `pyrelune.schemas`."""
