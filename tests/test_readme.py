"""The README's example runs as printed and does what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
HEADLESS = (
    "from panda3d.core import loadPrcFileData\n"
    'loadPrcFileData("", "window-type none\\naudio-library-name null")\n'
)


def example() -> str:
    text = README.read_text()
    section = text[text.index("## Twenty lines") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_example_is_twenty_lines_or_so():
    code = [line for line in example().splitlines() if line.strip()]
    assert len(code) <= 22


def test_the_example_runs_and_prints_what_its_comments_promise():
    result = subprocess.run(
        [sys.executable, "-c", HEADLESS + example()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == ["hit at t = 0.49985", "LPoint3f(-0.15, 0, 1)"]


def test_every_test_the_guarantees_name_exists():
    text = README.read_text()
    section = text[text.index("## Guarantees") : text.index("## The geometry on its own")]
    named = []
    current = None
    for ref in re.findall(r"`((?:tests/\w+\.py)?::\w+)`", section):
        path, name = ref.split("::")
        current = path or current
        named.append((current, name))
    assert len(named) >= 20
    root = README.parent
    for path, name in named:
        source = (root / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} is not a test"


def test_the_geometry_examples_run_as_printed():
    import doctest

    text = README.read_text()
    section = text[text.index("## The geometry on its own") :]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    test = doctest.DocTestParser().get_doctest(block, {}, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert (runner.failures, runner.tries) == (0, 3)
