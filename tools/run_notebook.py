"""Execute a notebook in its own folder and save it with its outputs, so that the site shows what it printed and drew.

    python tools/run_notebook.py nbs/09_reproduction.ipynb

nbdev_test executes every notebook but keeps nothing; the reproduction's readings refer to tables and figures that
its cells print from the committed databases, so after the databases change it is executed again and saved (then
`nbdev_clean`, which keeps outputs). Stops at the first cell that raises, writing nothing.
"""
import os
import sys
from pathlib import Path

from execnb.nbio import read_nb, write_nb
from execnb.shell import CaptureShell

if len(sys.argv) != 2: sys.exit(__doc__)
path = Path(sys.argv[1]).resolve()
os.chdir(path.parent)
nb = read_nb(path)
CaptureShell().run_all(nb, exc_stop=True)
write_nb(nb, path)
print(f"executed and saved {path}")
