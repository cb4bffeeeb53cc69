"""The Jupyter project's conformance suite for kernels (jupyter_kernel_test), on pyrelune.

Configured as fully as the kernel allows: execution, streams, errors,
results, display data, clear_output, completion, is_complete, history (tail,
range, search) and inspection. The kernel is started as every Jupyter test here
starts it (`jupyter_host.started`: a kernelspec in a temporary Jupyter data folder).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, ClassVar

import jupyter_kernel_test
from support import jupyter_host


class PyreluneKernelTests(jupyter_kernel_test.KernelTests):  # type: ignore[misc]
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    code_generate_error = "raise ValueError('boom')"
    code_execute_result: ClassVar[list[dict[str, str]]] = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n * n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data: ClassVar[list[dict[str, str]]] = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
         "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
         "mime": "text/latex"},
    ]
    code_clear_output = "from IPython.display import clear_output; clear_output()"
    completion_samples: ClassVar[list[dict[str, Any]]] = [
        {"text": "zi", "matches": {"zip"}},
        {"text": "import pyrelu", "matches": {"pyrelune"}},
    ]
    complete_code_samples: ClassVar[list[str]] = [
        "1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples: ClassVar[list[str]] = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples: ClassVar[list[str]] = ["import = 7q"]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "zip"
    code_page_something = "zip?"

    _started: ClassVar[contextlib.ExitStack]

    @classmethod
    def setUpClass(cls) -> None:
        # jupyter_host's start, not the suite's own: a kernel whose port another process
        # took before it bound it is started again, and its stderr is kept.
        with contextlib.ExitStack() as stack:  # undone at once if the start fails
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            cls.km, cls.kc = stack.enter_context(jupyter_host.started(folder))
            cls._started = stack.pop_all()

    @classmethod
    def tearDownClass(cls) -> None:
        cls._started.close()
