"""Each mode wires one transport, one codec and the supervisor into a running program."""

from pyrelune import PyreluneError


class ConfigError(PyreluneError):
    """What a kernel refuses to start with: an rpc `--listen` value, a closed stdin or
    stdout, a Jupyter connection file. The message says why."""
