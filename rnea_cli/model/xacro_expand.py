"""xacro in, URDF out: the `xacro` package (PyPI), its expressions evaluated by rnea, in a child process.

A xacro file comes from whoever wrote it (a pull request, in CI), and xacro itself would run its
expressions with Python's eval, which reaches os.system. So every expression xacro evaluates
(`${...}`, `$(eval ...)`, conditions, property values, macro defaults, yaml units) goes through
safe_eval's interpreter instead; `$(env)` and `$(optenv)` read only the variables RNEA_XACRO_ENV
names (a CI job's secrets stay out of the URDF); includes and xacro.load_yaml read only files in the
robot's folder tree and in the packages found; a --xacro-arg the file does not declare is an error.
The expansion runs in a forked child that may use at most MEMORY bytes and RNEA_XACRO_TIMEOUT
seconds (20 by default), whose output may be at most MAX_OUTPUT bytes, and which the kernel keeps
from writing files, running programs and opening TCP connections where it can (sandbox.py). `$(find PKG)` is resolved by
searching the --package-path folders and ROS_PACKAGE_PATH for a package.xml naming PKG. Errors come
back as one line with the file and, where xacro's elements tell it, the line.
"""

import contextlib
import io
import os
import pickle
import signal
import struct
import sys

from ..errors import URDFError, printable, shown
from .safe_eval import BUILTINS, MATH, UNKNOWN, Evaluator, Namespace, Refused

MEMORY = 2 << 30
MAX_OUTPUT = 1 << 26
_LINE = "rnea.line"


def expand(path, xacro_args=(), package_paths=()):
    """The URDF text (bytes) of a xacro file; URDFError naming file and line on any failure."""
    path = str(path)
    if not os.path.isfile(path):
        raise URDFError(path, None, "cannot read: No such file or directory" if not os.path.exists(path)
                        else "cannot read: not a file")
    mappings = {}
    for arg in xacro_args:
        name, sep, value = arg.partition(":=")
        if not sep or not name.strip():
            raise URDFError("--xacro-arg", None, f"{shown(arg)} is not NAME:=VALUE")
        mappings[name.strip()] = value
    # absolute: $(find PKG) must name the package's folder whatever the child's working directory
    folders = [os.path.abspath(p) for p in list(package_paths) +
               [p for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]]
    try:
        import xacro  # noqa: F401
    except ImportError:
        raise URDFError(path, None, "expanding xacro needs the xacro package: pip install xacro") from None
    request = (path, mappings, folders, _environment())
    if not hasattr(os, "fork"):
        return _result(path, _expand_here(*request))
    return _result(path, _in_child(*request))


def _environment():
    """The environment variables a xacro file may read ($(env), $(optenv)): those RNEA_XACRO_ENV
    names, comma-separated; none by default."""
    return frozenset(name.strip() for name in os.environ.get("RNEA_XACRO_ENV", "").split(",") if name.strip())


def _result(path, outcome):
    kind, value = outcome
    if kind == "ok":
        return value
    where, message = value
    raise URDFError(where[0] if where[0] else path, where[1], message)


def _timeout():
    """Seconds of CPU (and one more of wall time) the child may take: RNEA_XACRO_TIMEOUT, else 20."""
    text = os.environ.get("RNEA_XACRO_TIMEOUT", "20")
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds <= 86400:  # (NaN too)
        raise URDFError("RNEA_XACRO_TIMEOUT", None, f"expected seconds, above 0 and at most 86400: {shown(text)}")
    return seconds


def _in_child(path, mappings, folders, environment):
    timeout = _timeout()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: limits, expand, send the outcome, end without cleanup
        try:
            os.close(read)
            import resource

            limit = _address_space() + MEMORY  # what the parent had mapped already, and MEMORY more
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            cpu = max(int(timeout), 1)
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            outcome = _expand_here(path, mappings, folders, environment, confine=lambda files: _confine(
                write, files, environment))
        except BaseException as exc:  # MemoryError and the like, outside xacro
            outcome = ("error", ((path, None), f"xacro failed: {type(exc).__name__}"))
        data = pickle.dumps(outcome)
        with os.fdopen(write, "wb") as out:
            out.write(struct.pack("<Q", len(data)) + data)
        os._exit(0)
    os.close(write)
    return _from_child(pid, read, path, timeout)


def _confine(keep, files, environment):
    """This child as the kernel can confine it (sandbox.py), reading only the files the xacro file
    may read, its environment only the variables allowed: what it needs is imported first."""
    import glob  # noqa: F401  (what expanding imports on its way, imported while it can be read)
    import xml.dom.expatbuilder  # noqa: F401
    import xml.parsers.expat  # noqa: F401

    import xacro.substitution_args  # noqa: F401
    import yaml  # noqa: F401

    from . import sandbox

    for name in set(os.environ) - environment:
        del os.environ[name]
    sandbox.confine(keep, files.roots)


def _address_space():
    """Bytes of address space this process has mapped (Linux), else 0."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _from_child(pid, read, path, timeout):
    import select
    import time

    deadline, chunks = time.monotonic() + timeout + 1, []
    with os.fdopen(read, "rb", buffering=0) as stream:
        while True:
            left = deadline - time.monotonic()
            ready = select.select([stream], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "error", ((path, None), f"xacro took longer than {timeout + 1:g} s (a runaway macro?)")
            part = stream.read(1 << 20)
            if not part:
                break
            chunks.append(part)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if len(data) < 8 or len(data) != 8 + struct.unpack("<Q", data[:8])[0]:
        why = {signal.SIGXCPU: f"took more than {timeout:g} s of CPU (a runaway macro?)",
               signal.SIGKILL: "was killed"}.get(os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                                                 f"needed more than {MEMORY >> 30} GiB of memory, or crashed")
        return "error", ((path, None), f"xacro {why}")
    return pickle.loads(data[8:])


def _expand_here(path, mappings, folders, environment, confine=None):
    """('ok', URDF bytes) or ('error', ((file, line), message)), in this process; confine(files),
    if given, is called once the packages are found, before anything of the xacro file is read."""
    import xml.parsers.expat

    import xacro

    packages = package_index(folders)
    files = _Files(path, packages)
    if confine is not None:
        confine(files)
    noise = io.StringIO()
    declared = []
    try:
        with _safe_xacro(files, packages, environment, declared), contextlib.redirect_stderr(noise), \
                contextlib.redirect_stdout(noise):
            doc = xacro.process_file(path, mappings=dict(mappings))
        text = doc.toprettyxml(indent=" ", encoding="utf-8")
    except xml.parsers.expat.ExpatError as exc:
        where = getattr(exc, "rnea_file", None) or (xacro.filestack[-1] if xacro.filestack else path)
        return "error", ((where, exc.lineno), f"malformed XML: {xml.parsers.expat.errors.messages[exc.code]}")
    except RecursionError:  # (where the stack ran out depends on its depth: a loop is named where it starts)
        files = xacro.filestack or []
        file, line = _where(sys.exc_info()[2], path, xacro, within=_loop(files)[:1])
        return "error", ((os.path.normpath(file), line), _too_deep(files))
    except Exception as exc:  # XacroException, Refused, and what xacro lets through (RuntimeError, KeyError, ...)
        return "error", (_where(exc.__traceback__, path, xacro), "xacro: " + _message(exc, xacro))
    unknown = [name for name in mappings if name not in declared]
    if unknown:
        known = ", ".join(sorted(set(declared))) or "none"
        return "error", (("--xacro-arg", None), f"{shown(unknown[0])} is not an arg of {os.path.basename(path)} "
                                                f"(it declares: {printable(known, 300)})")
    if len(text) > MAX_OUTPUT:
        return "error", ((path, None), f"expands to more than {MAX_OUTPUT >> 20} MiB of URDF")
    return "ok", text


# What _safe_xacro replaces in xacro (2.1): where it evaluates, reads files and the environment.
_HOOKED = {"xacro": ("safe_eval", "parse", "glob", "Table", "YamlDictWrapper", "load_yaml", "abs_filename_spec",
                     "filestack", "root_dir", "_global_symbols"),
           "xacro.substitution_args": ("_eval", "_eval_env", "_eval_optenv", "_eval_find", "_eval_dict",
                                       "_eval_arg", "convert_value", "SubstitutionException")}


@contextlib.contextmanager
def _safe_xacro(files, packages, environment, declared):
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


class _Files:
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


def _loop(files):
    """The first files of xacro's stack of files being included that include each other, the
    first again at the end; [] if none does."""
    seen = {}
    for k, name in enumerate(files):
        name = os.path.realpath(name)  # the same file by any path (sub/../sub/a.xacro)
        if name in seen:
            return files[seen[name]:k + 1]
        seen[name] = k
    return []


def _too_deep(files):
    """Why the expansion recursed too deep: files that include each other, else a macro that calls itself."""
    loop = _loop(files)
    if loop:
        return f"an include loop: {printable(' -> '.join(os.path.basename(f) for f in loop), 300)}"
    return "macros nested too deep (a macro that calls itself?)"


def package_index(folders):
    """{package name: its folder} for the package.xml files under folders (first found wins),
    not descending into a package or a folder marked COLCON_IGNORE / CATKIN_IGNORE."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    found = {}
    for top in folders:
        for folder, subfolders, files in os.walk(top):
            if "COLCON_IGNORE" in files or "CATKIN_IGNORE" in files:
                subfolders[:] = []
            elif "package.xml" in files:
                subfolders[:] = []
                try:
                    name = etree.parse(os.path.join(folder, "package.xml"), parser).getroot().findtext("name")
                except (etree.XMLSyntaxError, OSError):
                    continue
                if name and name.strip():
                    found.setdefault(name.strip(), folder)
            else:
                subfolders[:] = [s for s in subfolders if not s.startswith(".")]
    return found


def _parse_with_lines(parse, files, declared):
    """xacro.parse, but only of the files _Files allows, every element remembering
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


def _where(trace, path, xacro, within=()):
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


def _message(exc, xacro):
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
