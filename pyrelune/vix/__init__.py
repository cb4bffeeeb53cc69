"""Installing pyrelune into Vix Note and proving the installation works.

Plain-value logic only (what to write where, how Vix Note reads it back,
what a cell run looks like to the host); the command line lives in
`pyrelune.cli.vix`.
"""
