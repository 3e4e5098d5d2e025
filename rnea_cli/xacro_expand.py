"""xacro in, URDF out: the `xacro` package (PyPI) run in a child process with limits.

xacro evaluates the Python expressions in `${...}` and follows includes, so a xacro file is a
program: rnea expands it in a forked child that may use at most MEMORY bytes and TIMEOUT
seconds, and whose output may be at most MAX_OUTPUT bytes. `$(find PKG)` is resolved by
searching the --package-path folders and ROS_PACKAGE_PATH for a package.xml naming PKG.
Errors come back as one line with the file and, where xacro's elements tell it, the line.
"""

import io
import os
import pickle
import signal
import struct
import sys

from .errors import URDFError, printable, shown

TIMEOUT = None  # seconds of CPU (and one more of wall time): RNEA_XACRO_TIMEOUT, else 20
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
    folders = list(package_paths) + [p for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    try:
        import xacro  # noqa: F401
    except ImportError:
        raise URDFError(path, None, "expanding xacro needs the xacro package: pip install xacro") from None
    if not hasattr(os, "fork"):
        return _result(path, _expand_here(path, mappings, folders))
    return _result(path, _in_child(path, mappings, folders))


def _result(path, outcome):
    kind, value = outcome
    if kind == "ok":
        return value
    where, message = value
    raise URDFError(where[0] if where[0] else path, where[1], message)


def _timeout():
    if TIMEOUT is not None:
        return TIMEOUT
    text = os.environ.get("RNEA_XACRO_TIMEOUT", "20")
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds <= 86400:  # (NaN too)
        raise URDFError("RNEA_XACRO_TIMEOUT", None, f"expected seconds, above 0 and at most 86400: {shown(text)}")
    return seconds


def _in_child(path, mappings, folders):
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
            outcome = _expand_here(path, mappings, folders)
        except BaseException as exc:  # MemoryError and the like, outside xacro
            outcome = ("error", ((path, None), f"xacro failed: {type(exc).__name__}"))
        data = pickle.dumps(outcome)
        with os.fdopen(write, "wb") as out:
            out.write(struct.pack("<Q", len(data)) + data)
        os._exit(0)
    os.close(write)
    return _from_child(pid, read, path, timeout)


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


def _expand_here(path, mappings, folders):
    """('ok', URDF bytes) or ('error', ((file, line), message)), in this process."""
    import contextlib
    import xml.parsers.expat

    import xacro
    import xacro.substitution_args as substitution

    packages = package_index(folders)

    def find(package):
        if package not in packages:
            raise LookupError(f"package {package} not found in --package-path or ROS_PACKAGE_PATH "
                              f"({len(folders)} folder{'s' if len(folders) != 1 else ''} searched)")
        return packages[package]

    substitution._eval_find = substitution._eval_dict["find"] = find
    parse = xacro.parse
    xacro.parse = _parse_with_lines(parse)
    noise = io.StringIO()
    try:
        with contextlib.redirect_stderr(noise), contextlib.redirect_stdout(noise):
            doc = xacro.process_file(path, mappings=dict(mappings))
        text = doc.toprettyxml(indent=" ", encoding="utf-8")
    except xml.parsers.expat.ExpatError as exc:
        where = getattr(exc, "rnea_file", None) or (xacro.filestack[-1] if xacro.filestack else path)
        return "error", ((where, exc.lineno), f"malformed XML: {xml.parsers.expat.errors.messages[exc.code]}")
    except RecursionError:
        file, line = _where(sys.exc_info()[2], path, xacro)
        return "error", ((os.path.normpath(file), line), _too_deep(xacro.filestack or []))
    except Exception as exc:  # XacroException, and what xacro lets through (RuntimeError, KeyError, ...)
        return "error", (_where(exc.__traceback__, path, xacro), "xacro: " + _message(exc, xacro))
    finally:
        xacro.parse = parse
    if len(text) > MAX_OUTPUT:
        return "error", ((path, None), f"expands to more than {MAX_OUTPUT >> 20} MiB of URDF")
    return "ok", text


def _too_deep(files):
    """Why the expansion recursed too deep: files that include each other (xacro's stack of the
    files being included, left as it was), else a macro that calls itself."""
    seen = {}
    for k, name in enumerate(files):
        name = os.path.realpath(name)  # the same file by any path (sub/../sub/a.xacro)
        if name in seen:
            loop = " -> ".join(os.path.basename(f) for f in files[seen[name]:k + 1])
            return f"an include loop: {printable(loop, 300)}"
        seen[name] = k
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


def _parse_with_lines(parse):
    """xacro.parse, but every element remembers (file, line), so that errors can name them."""
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
            stream = open(os.path.join(xacro.root_dir, filename), "rb")
        except OSError as exc:
            xacro.filestack.pop()
            raise xacro.XacroException(f"{exc.strerror}: {exc.filename}", exc=exc) from None
        with stream:
            builder = Builder()
            builder.filename = filename
            try:
                return builder.parseFile(stream)
            except Exception as exc:
                exc.rnea_file = filename
                raise

    return parse_with_lines


def _where(trace, path, xacro):
    """(file, line) of the innermost xacro element being worked on when the error rose."""
    found = None
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_globals.get("__name__", "").startswith("xacro"):
            for name in ("node", "elt"):
                node = frame.f_locals.get(name)
                while node is not None and getattr(node, "nodeType", None) not in (None, 1):
                    node = node.parentNode
                location = node.getUserData(_LINE) if node is not None and hasattr(node, "getUserData") else None
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
    if isinstance(cause, NameError) and getattr(cause, "name", None):
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
