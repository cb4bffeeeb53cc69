"""pyrelune runs Python notebook cells for host applications.

The package is imported on every oneshot request, so it imports nothing here.
"""

__version__ = "0.2.0"
