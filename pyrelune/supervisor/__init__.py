"""The runtime's own process: it forks the worker, reads its pipes, decides deadlines and caps.

Nothing here imports `pyrelune.worker` except inside a fork target, which
runs in the child: user code and the supervisor never share a module's state.
"""
