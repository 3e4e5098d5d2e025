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
