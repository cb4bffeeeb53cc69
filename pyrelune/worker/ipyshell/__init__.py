"""IPython's own shell runs the cells, wired to the worker's events (the Jupyter mode's).

The notebook ecosystem reaches the kernel through `get_ipython()`: ipywidgets'
`Output` and `interact` ask it for the request being served, plotly and
bokeh ask whether a notebook is there, ipympl, autoreload, sympy's printing
and every extension register with its events, magics and formatters. No
imitation keeps up with that surface, so where a host wants it the worker
runs an `InteractiveShell` of pyrelune's own, as ipykernel and xeus-python
run theirs: `shell` is that shell and one cell run through it, `publish`
turns its displays and results into the worker's events, `kernel` is what
libraries use of ipykernel's kernel object, `answers` is completion and
inspection through IPython. Everything else stays the worker's: the capture
of fds 1 and 2, stream order, the cell a thread's output belongs to,
interrupts, `input()`, comms, the output caps.
"""
