"""xacro in, URDF out: the `xacro` package (PyPI), its expressions evaluated by rnea, in a child process.

A xacro file comes from whoever wrote it (a pull request, in CI), and xacro itself would run its
expressions with Python's eval, which reaches os.system. So every expression xacro evaluates
(`${...}`, `$(eval ...)`, conditions, property values, macro defaults, yaml units) goes through
safe_eval's interpreter instead; `$(env)` and `$(optenv)` read only the variables RNEA_XACRO_ENV
names (a CI job's secrets stay out of the URDF); includes and xacro.load_yaml read only files in the
robot's folder tree and in the packages found (xacro_hooks.py, what rnea replaces in xacro); a
--xacro-arg the file does not declare is an error. The expansion runs in a forked child that may
use at most MEMORY bytes and RNEA_XACRO_TIMEOUT seconds (xacro_child.py), whose output may be at most
MAX_OUTPUT bytes, and which the kernel keeps from writing files, running programs and opening TCP
connections where it can (sandbox.py). `$(find PKG)` is resolved by searching the --package-path
folders and ROS_PACKAGE_PATH for a package.xml naming PKG. Errors come back as one line with the
file and, where xacro's elements tell it, the line.
"""

import contextlib
import functools
import io
import os
import sys

from ..errors import URDFError, printable, shown
from . import xacro_hooks
from .xacro_child import expand_in_child

MAX_OUTPUT = 1 << 26


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
    environment = _environment()
    here = functools.partial(_expand_here, path, mappings, folders, environment)
    if not hasattr(os, "fork"):
        return _result(path, here())
    return _result(path, expand_in_child(path, environment, here))


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


def _expand_here(path, mappings, folders, environment, confine=None):
    """('ok', URDF bytes) or ('error', ((file, line), message)), in this process; confine(files),
    if given, is called once the packages are found, before anything of the xacro file is read."""
    import xml.parsers.expat

    import xacro

    packages = package_index(folders)
    files = xacro_hooks.Files(path, packages)
    if confine is not None:
        confine(files)
    noise = io.StringIO()
    declared = []
    try:
        with xacro_hooks.safe_xacro(files, packages, environment, declared), contextlib.redirect_stderr(noise), \
                contextlib.redirect_stdout(noise):
            doc = xacro.process_file(path, mappings=dict(mappings))
        text = doc.toprettyxml(indent=" ", encoding="utf-8")
    except xml.parsers.expat.ExpatError as exc:
        where = getattr(exc, "rnea_file", None) or (xacro.filestack[-1] if xacro.filestack else path)
        return "error", ((where, exc.lineno), f"malformed XML: {xml.parsers.expat.errors.messages[exc.code]}")
    except RecursionError:  # (where the stack ran out depends on its depth: a loop is named where it starts)
        files = xacro.filestack or []
        file, line = xacro_hooks.where(sys.exc_info()[2], path, xacro, within=_loop(files)[:1])
        return "error", ((os.path.normpath(file), line), _too_deep(files))
    except Exception as exc:  # XacroException, Refused, and what xacro lets through (RuntimeError, KeyError, ...)
        return "error", (xacro_hooks.where(exc.__traceback__, path, xacro),
                         "xacro: " + xacro_hooks.message(exc, xacro))
    unknown = [name for name in mappings if name not in declared]
    if unknown:
        known = ", ".join(sorted(set(declared))) or "none"
        return "error", (("--xacro-arg", None), f"{shown(unknown[0])} is not an arg of {os.path.basename(path)} "
                                                f"(it declares: {printable(known, 300)})")
    if len(text) > MAX_OUTPUT:
        return "error", ((path, None), f"expands to more than {MAX_OUTPUT >> 20} MiB of URDF")
    return "ok", text


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
