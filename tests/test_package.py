"""The package's own surface: what `import rnea_cli` gives, and what the CLI's start-up loads.
Each check runs in a fresh interpreter, since imports are the point."""

import pathlib
import subprocess
import sys

import pytest


def python(code):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_command_line_starts_without_numpy_or_lxml():
    out = python("import sys\nfrom rnea_cli.cli import main\n"
                 "print(sorted(m for m in ('numpy', 'lxml', 'polars', 'rich', 'yaml') if m in sys.modules))")
    assert out == "[]"


@pytest.mark.parametrize("first", ["import rnea_cli.dynamics.engine", "from rnea_cli.dynamics.engine import GRAVITY",
                                   "import rnea_cli", "from rnea_cli import inverse_dynamics"])
def test_rnea_cli_rnea_is_the_function_whatever_was_imported_first(first):
    """The engine lives in rnea_cli.dynamics.engine; no module is named rnea_cli.rnea, so the name is only the function."""
    out = python(f"{first}\nimport importlib.util, types, rnea_cli\nfrom rnea_cli import rnea\n"
                 "print(callable(rnea_cli.rnea), rnea is rnea_cli.rnea, isinstance(rnea, types.FunctionType),\n"
                 "      importlib.util.find_spec('rnea_cli.rnea') is None)")
    assert out == "True True True True"


def test_every_exported_name_resolves():
    """Each name of __all__ resolves (importing its module) to an object rnea_cli defines, and once
    all have, the package holds no other public name but its modules: a name added to rnea_cli but
    not to __all__, or one taken from another package, fails here. (dir() would not: it lists
    __all__'s names by construction.)"""
    out = python("import types, rnea_cli\n"
                 "homes = {getattr(rnea_cli, name).__module__.partition('.')[0] for name in rnea_cli.__all__}\n"
                 "public = sorted(name for name, value in vars(rnea_cli).items()\n"
                 "                if not name.startswith('_') and not isinstance(value, types.ModuleType))\n"
                 "print(homes, public == rnea_cli.__all__)")
    assert out == "{'rnea_cli'} True"
    with pytest.raises(AssertionError, match="no attribute 'nothing'"):
        python("import rnea_cli\nrnea_cli.nothing")


@pytest.mark.parametrize("given, expected", [(None, "1"), ("3", "3")])
def test_the_command_line_runs_openblas_single_threaded_unless_told(given, expected):
    """OPENBLAS_NUM_THREADS as numpy sees it when a command first imports it (later has no effect);
    a value the user gave stands."""
    env = ("os.environ.pop('OPENBLAS_NUM_THREADS', None)\n" if given is None  # as if the user set none
           else f"os.environ['OPENBLAS_NUM_THREADS'] = {given!r}\n")
    robot = pathlib.Path(__file__).resolve().parents[1] / "robots" / "planar2.urdf"
    out = python(f"import os, sys\n{env}seen = []\n"
                 "sys.addaudithook(lambda event, args: event == 'import' and args[0] == 'numpy' and not seen\n"
                 "                 and seen.append(os.environ.get('OPENBLAS_NUM_THREADS')))\n"
                 f"from rnea_cli.cli import run\nsys.argv = ['rnea', 'info', {str(robot)!r}]\n"
                 "try:\n    run()\nexcept SystemExit:\n    pass\nprint(seen)")
    assert out.splitlines()[-1] == f"[{expected!r}]"
