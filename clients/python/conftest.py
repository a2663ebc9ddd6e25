"""pytest setup for clients/python: the package from this checkout, its
plugin, and pytester (the plugin's own tests run pytest in a subprocess).

Environment (ctest sets both):
  UNDERSTUDY_BIN       the understudy binary (default: <repo>/build/cli/understudy)
  UNDERSTUDY_PY_STUBS  the generated stubs (default: <repo>/build/python)

Every wait is bounded: each RPC has a deadline, the server's start and stop
are bounded by understudy_testing.Server.
"""

import os
import pathlib
import sys

CLIENT_DIR = pathlib.Path(__file__).resolve().parent
REPO = CLIENT_DIR.parents[1]
sys.path.insert(0, str(CLIENT_DIR))
# These tests start their own server (it must record from their fake
# upstream); attaching to a running one is tested with pytester.
os.environ.pop("UNDERSTUDY_ADDR", None)
os.environ.pop("UNDERSTUDY_HTTP", None)
if not os.environ.get("UNDERSTUDY_BIN") and (REPO / "build" / "cli" / "understudy").exists():
    os.environ["UNDERSTUDY_BIN"] = str(REPO / "build" / "cli" / "understudy")

pytest_plugins = ["pytester", "understudy_testing.pytest_plugin"]
