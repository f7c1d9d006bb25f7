"""The browser tests' one condition: a Chromium on this machine, driven by Playwright (installed by `make install`).

Without it they are skipped with a reason that says how to get them, and the run's summary repeats it
(tests/conftest.py), so a machine without a browser never passes them silently."""
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOW = ("on Debian or Ubuntu `apt-get install -y chromium` (Playwright, which drives it, comes with `make install`; "
       "`playwright install` is not needed), then run the tests again")
needs_chromium = pytest.mark.skipif(not CHROMIUM, reason=f"browser test: no Chromium on this machine; {HOW}")
