"""The file names a cell's code is compiled under: ipykernel's scheme (see `wire.cellnames`)."""

from __future__ import annotations

import os

from IPython.core.compilerop import CachingCompiler

from pyrelune.wire.cellnames import cell_file


class CellCompiler(CachingCompiler):
    """IPython's compiler, with cells named by `wire.cellnames.cell_file`: in the folder of
    the supervisor (the worker's parent), which the debugger announces."""

    def get_code_name(self, raw_code: str, transformed_code: str, number: int) -> str:
        return cell_file(os.getppid(), raw_code)
