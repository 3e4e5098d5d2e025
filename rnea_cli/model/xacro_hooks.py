"""What rnea replaces inside xacro (2.1) so that expanding a file runs none of its code and reads
nothing it may not (xacro_expand.py runs xacro under these hooks).

Every expression xacro evaluates (`${...}`, `$(eval ...)`, conditions, property values, macro
defaults, yaml units) goes through safe_eval's interpreter instead of Python's eval; `$(env)` and
`$(optenv)` read only the variables allowed; `$(find PKG)` answers from the packages found;
includes, their glob patterns and xacro.load_yaml read only files in the robot's folder tree and
the packages (`Files`). Every element parsed remembers its file and line, so that `where` can
name them for an error, and `message` gives xacro's error without its repetitions.
"""

import contextlib
import os

from ..errors import printable, shown
from .safe_eval import BUILTINS, MATH, UNKNOWN, Evaluator, Namespace, Refused

_LINE = "rnea.line"


# What safe_xacro replaces in xacro (2.1): where it evaluates, reads files and the environment.
_HOOKED = {"xacro": ("safe_eval", "parse", "glob", "Table", "YamlDictWrapper", "load_yaml", "abs_filename_spec",
                     "filestack", "root_dir", "_global_symbols"),
           "xacro.substitution_args": ("_eval", "_eval_env", "_eval_optenv", "_eval_find", "_eval_dict",
                                       "_eval_arg", "convert_value", "SubstitutionException")}


@contextlib.contextmanager
def safe_xacro(files, packages, environment, declared):
    """xacro with rnea's evaluator for every expression, files read only in the robot's folder tree
    and the packages, the environment read only for the names allowed, and the names of the args the
    files declare appended to declared; xacro as it was afterwards."""
    import importlib

    import xacro
    import xacro.substitution_args as substitution

    for module, names in _HOOKED.items():
        missing = [n for n in names if not hasattr(importlib.import_module(module), n)]
        if missing:  # another xacro than the one these hooks were written for: refuse, never run it unguarded
            raise Refused(f"xacro {getattr(xacro, '__version__', '')} lacks {module}.{missing[0]}, which rnea "
                          f"replaces to expand safely (pip install 'xacro>=2.1.1,<2.2')")

    def find(package):
        if package not in packages:
            raise LookupError(f"package {package} not found in --package-path or ROS_PACKAGE_PATH "
                              f"({len(packages)} package{'s' if len(packages) != 1 else ''} found)")
        return packages[package]

    def env(name, default=None):
        if name not in environment:
            raise Refused(f"reading the environment variable {shown(name)} is not allowed "
                          f"(RNEA_XACRO_ENV=NAME,... allows it)")
        if default is None and name not in os.environ:
            raise substitution.SubstitutionException(f"environment variable {name} is not set")
        return os.environ.get(name, default)

    def load_yaml(filename):
        files.check(xacro.abs_filename_spec(filename))
        return xacro.load_yaml(filename)

    functions, evaluate = _xacro_names(xacro, load_yaml)
    patches = [(xacro, "safe_eval", evaluate), (xacro, "parse", _parse_with_lines(xacro.parse, files, declared)),
               (xacro, "glob", files),  # xacro's glob.glob(pattern) of an include
               (substitution, "_eval", _eval_substitution(substitution, functions, find, env)),
               (substitution, "_eval_find", find), (substitution, "_eval_env", env),
               (substitution, "_eval_optenv", lambda name, default="": env(name, default))]
    saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
    for module, name, value in patches:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


class Files:
    """The files a xacro file may read: those in its own folder tree (where it is named, and where
    it is if that is a symlink) and in the packages found, symlinks resolved (a link to /etc/passwd
    beside the robot is outside)."""

    def __init__(self, path, packages):
        self.roots = [os.path.realpath(os.path.dirname(os.path.abspath(path)))]
        self.roots += sorted({os.path.dirname(os.path.realpath(path)),
                              *(os.path.realpath(folder) for folder in packages.values())} - set(self.roots))

    def allowed(self, filename):
        target = os.path.realpath(filename)
        return any(os.path.commonpath([target, root]) == root for root in self.roots)

    def check(self, filename):
        if not self.allowed(filename):
            raise Refused(f"reading {shown(filename)} is not allowed: a xacro file reads only files in its own "
                          f"folder ({printable(self.roots[0], 200)}) and below, and in the packages found")

    def glob(self, pattern):
        """glob.glob for an include of a pattern: one that starts in a readable folder, and only
        the readable files it matches (no name of a file outside comes back, not even in an error)."""
        import glob
        import re

        self.check(os.path.dirname(re.split(r"[*?[]", pattern)[0]) or ".")
        return [name for name in glob.glob(pattern) if self.allowed(name)]


def _xacro_names(xacro, load_yaml):
    """(the functions an expression may call, xacro.safe_eval's replacement): the global names of
    `${...}` are xacro's without python.type, python.vars and the like."""
    own = xacro._global_symbols["xacro"]
    xacro_functions = {name: dict.__getitem__(own, name) for name in (
        "abs_filename", "arg", "dotify", "error", "fatal", "message", "print_location", "tokenize", "warning")}
    xacro_functions["load_yaml"] = load_yaml
    names = {**MATH, **{n: BUILTINS[n] for n in ("list", "dict", "map", "len", "str", "float", "int", "bool",
                                                  "min", "max", "round", "sorted", "range")},
             "True": True, "False": False, "python": Namespace.of({**BUILTINS, "True": True, "False": False}),
             "math": Namespace.of(MATH), "xacro": Namespace.of(xacro_functions),
             **{n: xacro_functions[n] for n in ("load_yaml", "abs_filename", "dotify")}}
    functions = [f for f in (*BUILTINS.values(), *MATH.values(), *xacro_functions.values()) if callable(f)]

    def lookup(table, name):
        """A property's value (xacro's scopes, innermost first), else a global name; the properties
        of an include with ns= as a Namespace, never xacro's table itself (which holds blocks)."""
        while isinstance(table, xacro.Table):
            if dict.__contains__(table, name):
                value = table[name]
                return Namespace(lambda key: lookup(value, key)) if isinstance(value, xacro.Table) else value
            table = table.parent
        if name in names:
            return names[name]
        raise NameError(f"name '{name}' is not defined", name=name)

    def attribute(value, key):
        if isinstance(value, xacro.YamlDictWrapper) and dict.__contains__(value, key):
            return value[key]  # props.a, props['a']
        return UNKNOWN

    def evaluate(text, symbols, local=None):
        return Evaluator(lambda name: lookup(symbols, name), functions, attribute)(text)

    return functions, evaluate


def _eval_substitution(substitution, functions, find, env):
    """xacro's `$(eval ...)`: arg, find, env, optenv, math and a few builtins, the args by name."""
    def evaluate(text, context):
        args = context.setdefault("arg", {})
        own = {"arg": lambda name: substitution.convert_value(substitution._eval_arg(name, args=args), "auto"),
               "find": find, "env": env, "optenv": lambda name, default="": env(name, default),
               "true": True, "false": False, "True": True, "False": False, **MATH}

        def lookup(name):
            if name in own:
                return own[name]
            if dict.__contains__(args, name):
                return substitution.convert_value(args[name], "auto")
            if name in BUILTINS:
                return BUILTINS[name]
            raise NameError(f"name '{name}' is not defined", name=name)

        return str(Evaluator(lookup, [*functions, *own.values()])(text))

    return evaluate


def _parse_with_lines(parse, files, declared):
    """xacro.parse, but only of the files `Files` allows, every element remembering
    (file, line) so that errors can name them, and the names of the file's <xacro:arg>s appended to
    declared."""
    import xml.dom.expatbuilder

    class Keep:
        def handle(self, operation, key, data, src, dst):
            if dst is not None:
                dst.setUserData(key, data, self)

    keep = Keep()

    class Builder(xml.dom.expatbuilder.ExpatBuilderNS):
        filename = None

        def start_element_handler(self, name, attributes):
            super().start_element_handler(name, attributes)
            self.curNode.setUserData(_LINE, (self.filename, self._parser.CurrentLineNumber), keep)

    def parse_with_lines(inp, filename=None):
        import xacro

        if inp is not None or filename is None:
            return parse(inp, filename)
        try:
            files.check(os.path.join(xacro.root_dir, filename))
        except Refused:
            xacro.filestack.pop()  # the error is the including element's, as xacro's own for a missing file
            raise
        try:
            stream = open(os.path.join(xacro.root_dir, filename), "rb")
        except OSError as exc:
            xacro.filestack.pop()
            raise xacro.XacroException(f"{exc.strerror}: {exc.filename}", exc=exc) from None
        with stream:
            builder = Builder()
            builder.filename = filename
            try:
                doc = builder.parseFile(stream)
            except Exception as exc:
                exc.rnea_file = filename
                raise
        declared.extend(arg.getAttribute("name") for arg in doc.getElementsByTagName("xacro:arg"))
        return doc

    return parse_with_lines


def where(trace, path, xacro, within=()):
    """(file, line) of the innermost xacro element being worked on when the error rose; with
    within = [file], the outermost element of that file."""
    found = None
    within = {os.path.realpath(f) for f in within}
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_globals.get("__name__", "").startswith("xacro"):
            for name in ("node", "elt"):
                node = frame.f_locals.get(name)
                while node is not None and getattr(node, "nodeType", None) not in (None, 1):
                    node = node.parentNode
                location = node.getUserData(_LINE) if node is not None and hasattr(node, "getUserData") else None
                if location and within and os.path.realpath(location[0]) in within:
                    return location[0], location[1]
                if location:
                    found = location
                    break
        trace = trace.tb_next
    if found:
        return found[0], found[1]
    return (xacro.filestack[-1] if getattr(xacro, "filestack", None) else path), None


def message(exc, xacro):
    """xacro's message without its repetitions: the innermost cause, and the expression."""
    expressions = []
    inner = exc
    while isinstance(inner, xacro.XacroException):
        suffix = getattr(inner, "suffix", "") or ""
        if suffix.strip():
            expressions.append(suffix.strip().replace("when evaluating expression ", ""))
        if not isinstance(getattr(inner, "exc", None), xacro.XacroException):
            break
        inner = inner.exc
    cause = getattr(inner, "exc", None)
    if isinstance(inner, Refused) or isinstance(cause, Refused):
        text = str(cause or inner)
    elif isinstance(cause, NameError) and getattr(cause, "name", None):
        text = f"undefined name {cause.name}"
    elif isinstance(cause, LookupError) and "package" in str(cause):
        text = str(cause).strip("'\"")
    elif cause is not None:
        text = f"{type(cause).__name__}: {cause}"
    else:
        text = " ".join(str(inner).split("\n")[0].split()) or type(inner).__name__
    if expressions:
        text += f" (in ${{{expressions[-1].strip(chr(39))[:80]}}})"
    return text
