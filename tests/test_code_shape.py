"""Every function of the package reads in one screen and takes a handful of arguments: at most 60 lines and 10
parameters (self and cls not counted; *args and **kwargs count one each). Settings that travel together are one
object (a dataclass of the run spec, JobFacts, CountGraph) rather than a longer argument list. Every module does
one job and reads in one sitting: at most 300 lines."""

import ast

import pytest

from conftest import REPO

MAX_LINES, MAX_PARAMS = 60, 10
MAX_FILE_LINES = 300


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def shape(node) -> tuple[int, int]:
    """(lines, parameters) of a function definition."""
    a = node.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    n = len(params) + (a.vararg is not None) + (a.kwarg is not None)
    if params and params[0].arg in ("self", "cls"):
        n -= 1
    return node.end_lineno - node.lineno + 1, n


def offenders(root) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for fn in _functions(ast.parse(path.read_text(), str(path))):
            lines, params = shape(fn)
            if lines > MAX_LINES or params > MAX_PARAMS:
                out.append(f"{path.relative_to(root)}:{fn.lineno} {fn.name}: {lines} lines, {params} parameters")
    return out


def test_no_function_of_the_package_is_long_or_takes_many_arguments():
    assert offenders(REPO / "src") == []


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(a, b, c, d, e, f, g, h, i, j):\n    pass\n", []),
        ("def f(a, b, c, d, e, f, g, h, i, j, k):\n    pass\n", ["m.py:1 f: 2 lines, 11 parameters"]),
        ("class C:\n    def f(self, a, b, c, d, e, f, g, h, i, *args):\n        pass\n", []),
        (
            "class C:\n    def f(self, a, b, c, d, e, f, g, h, i, *args, **kw):\n        pass\n",
            ["m.py:2 f: 2 lines, 11 parameters"],
        ),
        ("def f():\n" + "    x = 1\n" * 59, []),
        ("def f():\n" + "    x = 1\n" * 60, ["m.py:1 f: 61 lines, 0 parameters"]),
    ],
)
def test_the_check_counts_lines_and_parameters(tmp_path, source, expected):
    (tmp_path / "m.py").write_text(source)
    assert offenders(tmp_path) == expected


def long_files(root) -> list[str]:
    return [
        f"{p.relative_to(root)}: {n} lines"
        for p in sorted(root.rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES
    ]


def test_no_module_of_the_package_is_long():
    assert long_files(REPO / "src") == []


def test_the_check_counts_a_modules_lines(tmp_path):
    (tmp_path / "short.py").write_text("x = 1\n" * MAX_FILE_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    assert long_files(tmp_path) == [f"long.py: {MAX_FILE_LINES + 1} lines"]
