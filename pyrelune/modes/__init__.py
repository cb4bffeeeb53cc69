"""Each mode wires one transport, one codec and the supervisor into a running program."""
