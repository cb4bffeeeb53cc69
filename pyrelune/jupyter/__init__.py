"""Making pyrelune a Jupyter kernel front ends can pick: the kernelspec it is listed by.

Plain-value logic (which folder, what kernel.json says); the command line lives in
`pyrelune.cli.jupyter`. Nothing here imports Jupyter's own packages: they are not
pyrelune's dependencies, and the folder layout they read is simple and stable. The
one exception is `provisioner`, which runs inside the front end, beside jupyter_client.
"""
