"""The README's "RE-GNN in your own model" example runs as it is written and reaches its stated score on DBLP."""

import re
import subprocess
import sys

import pytest

from conftest import REPO, real_dataset_dir


def readme_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## RE-GNN in your own model", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.onepython
def test_the_readme_layer_example_reaches_93_on_dblp(tmp_path):
    real_dataset_dir("DBLP")
    code = readme_example()
    assert "REGCNConv" in code and "range(100)" in code
    (tmp_path / "example.py").write_text(code)
    p = subprocess.run(
        [sys.executable, str(tmp_path / "example.py")], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert p.returncode == 0, p.stderr[-3000:]
    val, test = map(float, re.search(r"validation ([\d.]+), test Micro-F1 ([\d.]+)", p.stdout).groups())
    assert test >= 93.0, p.stdout
