"""The tests' helpers: hosts that drive each mode as its real host does, cells and strategies
several test modules share, process and warm-start probes (imported as `support.X`)."""
