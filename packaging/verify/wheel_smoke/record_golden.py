"""Records golden.db for the README's pytest example, as a user would:
`understudy record --db golden.db --session golden -- python my_agents.py`
with my_agents.script as the upstream model (fake_openai.py). The binary is
$UNDERSTUDY_BIN; run it in the folder that gets golden.db.
"""

import os
import subprocess
import sys

from fake_openai import FakeOpenAI
from my_agents import script

fake = FakeOpenAI(script)
try:
    done = subprocess.run(
        [os.environ["UNDERSTUDY_BIN"], "record", "--db", "golden.db", "--session", "golden",
         "--upstream", f"openai={fake.url}", "--", sys.executable, "my_agents.py"],
        capture_output=True, text=True, timeout=60)
finally:
    fake.close()
sys.stderr.write(done.stdout + done.stderr)
if done.returncode != 0 or fake.calls != 6:
    sys.exit(f"record_golden: understudy record exited {done.returncode} after {fake.calls} "
             "upstream calls (6 expected)")
