"""The worker process, the only place user code runs: its namespace, capture and display.

Loaded only after the fork, in the child; a cell's folder is on `sys.path`
here, so the runtime's own late imports go through `importhooks.import_own`.
"""
