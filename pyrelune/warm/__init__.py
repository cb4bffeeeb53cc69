"""Warm start for oneshot cells: a preloaded process forks one runtime per request.

`client` runs in the launcher Vix Note execs (it imports almost nothing),
`server` is the long-lived preloaded process, `served` is what its forked
child does to become the cold oneshot runtime, `place` is where their socket
lives and who may use it.
"""
