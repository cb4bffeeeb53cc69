"""The engine: a supervised worker process runs cells and reports events."""
