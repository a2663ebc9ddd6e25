"""The README's pytest example, verbatim: the first ```python block of
README.md that has a replay marker, and the `python -m pytest ...` line of the ```sh
block after it. The Python client's README must show the same example.
Writes the block to OUT_DIR/test_review_loop.py and prints the command.

    python readme_example.py README.md clients/python/README.md OUT_DIR
"""

import pathlib
import re
import sys

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.S | re.M)


def example(path):
    """(test source, command) of the README at `path`."""
    blocks = BLOCK.findall(pathlib.Path(path).read_text())
    for i, (lang, text) in enumerate(blocks):
        if lang == "python" and '@pytest.mark.understudy(mode="replay"' in text:
            after = [t for l, t in blocks[i + 1:i + 2] if l == "sh"]
            commands = [line for line in (after[0].splitlines() if after else [])
                        if line.startswith("python -m pytest ")]
            if not commands:
                sys.exit(f"readme_example: {path}: no `python -m pytest ...` line in a ```sh block right "
                         "after the example")
            return text, commands[0]
    sys.exit(f"readme_example: {path}: no ```python block with "
             '@pytest.mark.understudy(mode="replay", ...)')


main, client = example(sys.argv[1]), example(sys.argv[2])
if main != client:
    sys.exit(f"readme_example: the examples of {sys.argv[1]} and {sys.argv[2]} differ; keep them "
             "the same")
pathlib.Path(sys.argv[3], "test_review_loop.py").write_text(main[0])
print(main[1])
