"""Every error code the runtime reports, in one place: hosts and tests match on them."""

from __future__ import annotations

#: The cell raised an exception.
PYTHON_RUNTIME_ERROR = "python_runtime_error"
#: The cell was interrupted (KeyboardInterrupt).
INTERRUPTED = "interrupted"
#: The cell ran past its deadline and was stopped.
TIMEOUT = "timeout"
#: The worker process ended abnormally, or was stopped for what it wrote.
WORKER_DIED = "worker_died"
