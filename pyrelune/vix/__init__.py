"""Vix Note as a host: installing pyrelune into it, proving the installation works, and
where its cells run (`folders`).

Plain-value logic only (what to write where, how Vix Note reads it back,
what a cell run looks like to the host); the command line lives in
`pyrelune.cli.vix`.
"""
