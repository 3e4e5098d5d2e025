"""The package's imports (issue 24): the layers import only downward, as import-linter's contracts
in pyproject.toml say, every subpackage is a layer, and each module's rnea_cli imports, read from
its syntax (those inside functions too), make a graph without cycles."""

import ast

try:
    import tomllib
except ImportError:  # Python 3.10: import-linter's own dependency
    import tomli as tomllib

from conftest import ROOT


def _graph():
    package = ROOT / "rnea_cli"
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = here.split(".")
                    target = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in modules]
                edges.update(subs)
                if target in modules and len(subs) < len(node.names):
                    edges.add(target)
            elif isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in modules)
        edges.discard(name)
        graph[name] = edges
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_package_has_no_import_circle():
    cycles = _cycles(_graph())
    assert cycles == []


def test_the_circle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def _contracts():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_layers_import_only_downward(capsys):
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0, \
        capsys.readouterr().out


def test_every_subpackage_is_a_layer_and_every_module_beside_them_is_below_them():
    layers, beside = (next(c for c in _contracts() if c["type"] == kind) for kind in ("layers", "forbidden"))
    package = ROOT / "rnea_cli"
    folders = {f"rnea_cli.{p.parent.name}" for p in package.glob("*/__init__.py")}
    modules = {f"rnea_cli.{p.stem}" for p in package.glob("*.py") if p.name != "__init__.py"}
    assert set(layers["layers"]) == folders
    assert set(beside["source_modules"]) == modules and set(beside["forbidden_modules"]) == folders


def _state(tree, where):
    """What a module's syntax shows of state kept between calls: `global` statements, names bound
    at module level to an empty list, dict or set (a registry filled at run time), and writes to
    os.environ (setting, deleting, setdefault, putenv)."""
    empty = (ast.List, ast.Dict, ast.Set)
    found = [f"{where}:{n.lineno}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)]
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None and (
                isinstance(value, empty) and not getattr(value, "elts", getattr(value, "keys", None))
                or isinstance(value, ast.Call) and getattr(value.func, "id", None) in ("set", "dict", "list")
                and not value.args):
            found.append(f"{where}:{node.lineno}: an empty container at module level")
    for node in ast.walk(tree):
        target = node.value if isinstance(node, ast.Subscript) else node.func.value if isinstance(
            node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "setdefault", "update", "pop", "clear") else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "putenv":
            found.append(f"{where}:{node.lineno}: os.putenv")
        if isinstance(target, ast.Attribute) and target.attr == "environ" and (
                not isinstance(node, ast.Subscript) or isinstance(node.ctx, (ast.Store, ast.Del))):
            found.append(f"{where}:{node.lineno}: writes os.environ")
    return found


# The two writes of the environment that are not state: the console script sets OpenBLAS's threads
# before numpy is first imported (nothing later can), and the xacro child process empties its own
# environment of what the xacro file may not read, just before it expands it.
ALLOWED = {("rnea_cli/cli/__init__.py", "writes os.environ"), ("rnea_cli/model/xacro_child.py", "writes os.environ")}


def test_no_module_keeps_state_between_calls():
    found = []
    for path in sorted((ROOT / "rnea_cli").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        found += [f for f in _state(ast.parse(path.read_text()), where)
                  if (where, f.split(": ", 1)[1]) not in ALLOWED]
    assert found == []


def test_the_state_finder_finds_state():
    text = ("import os\nREGISTRY = {}\nSEEN: set = set()\nCONSTANT = {'a': 1}\ndef f():\n    global X\n"
            "    os.environ['A'] = '1'\n    os.environ.setdefault('B', '2')\n    del os.environ['C']\n"
            "    os.putenv('D', '3')\n    return os.environ['E'], os.environ.get('F')\n")
    found = _state(ast.parse(text), "m.py")
    assert [f.split(": ", 1)[0] for f in found] == ["m.py:6", "m.py:2", "m.py:3", "m.py:7", "m.py:8", "m.py:9",
                                                    "m.py:10"], found
