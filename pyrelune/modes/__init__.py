"""Each mode wires one transport, one codec and the engine into a running program."""
