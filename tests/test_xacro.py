"""A xacro file cannot run a command, open a connection, write a file or read outside its robot's
folder (issue 23): real escapes of xacro's own eval are refused with one line and exit 2 and leave
no trace; what robot descriptions use (macros, math, conditionals, yaml, includes, args) still works,
the values checked against Python's own arithmetic; and the kernel confines the child (sandbox.py)."""

import ast
import json
import math
import os
import re
import socket

import pytest
from lxml import etree

from conftest import run, torques
from rnea_cli.model import safe_eval, sandbox
from rnea_cli.model.xacro_expand import expand

XACRO = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'

# os's globals, then its builtins, with nothing but xacro's python namespace and no name starting with
# "__" (xacro's only check): a class's own attributes by name through vars(), a getset descriptor
# read through its type's __get__. Run by xacro's eval, each of these works (checked below).
GLOBALS = """<xacro:property name="V" value="${python.vars}"/>
<xacro:property name="T" value="${python.type}"/>
<xacro:property name="wc" value="${[c for c in V(T)['__subclasses__'](T.mro(T(()))[1])
                                    if 'wrap_close' in python.repr(c)][0]}"/>
<xacro:property name="init" value="${V(wc)['__init__']}"/>
<xacro:property name="d" value="${V(T(init))['__globals__']}"/>
<xacro:property name="g" value="${V(T(d))['__get__'](d, init)}"/>
<xacro:property name="b" value="${g['__builtins__']}"/>
"""
# the same chain in one expression, for a --xacro-arg substituted into ${$(arg mass) * 1.0}
ONE_LINE = ("[g['system']('touch {marker}') for V in [python.vars] for T in [python.type] for wc in [c for c in "
            "V(T)['__subclasses__'](T.mro(T(()))[1]) if 'wrap_close' in python.repr(c)] for init in "
            "[V(wc)['__init__']] for d in [V(T(init))['__globals__']] for g in [V(T(d))['__get__'](d, init)]][0]")

ESCAPES = {  # name: (body of the robot, what the one line says)
    "os.system": (GLOBALS + "<link name=\"a${g['system']('touch {marker}')}\"/>", "undefined name vars"),
    "subprocess": (GLOBALS + "<link name=\"a${b['__import__']('subprocess').run(['touch', '{marker}'])}\"/>",
                   "undefined name vars"),
    "open for writing": (GLOBALS + "<link name=\"a${b['open']('{marker}', 'w').write('x')}\"/>",
                         "undefined name vars"),
    "socket": (GLOBALS + "<link name=\"a${b['__import__']('socket').create_connection(('127.0.0.1', {port}))}\"/>",
               "undefined name vars"),
    "python.type": ("<link name=\"a${python.type(1)}\"/>", "undefined name type"),
    "__import__": ("<link name=\"a${__import__('os').system('touch {marker}')}\"/>",
                   "name __import__ is not allowed in a xacro expression"),
    "subclasses": ("<link name=\"a${().__class__.__bases__[0].__subclasses__()}\"/>",
                   "name __class__ is not allowed"),
    "getattr through vars": ("<link name=\"a${python.vars(python)}\"/>", "undefined name vars"),
    "attribute of a function": ("<link name=\"a${xacro.arg.func_globals}\"/>",
                                "attribute func_globals of a function is not allowed"),
    "attribute of a class": ("<link name=\"a${str.mro()}\"/>", "attribute mro of a type is not allowed"),
    "format string": ("<xacro:property name=\"f\" value=\"{0.__init__.__globals__}\"/>"
                      "<link name=\"a${f.format(xacro.arg)}\"/>", "attribute format of a str is not allowed"),
    "lambda": ("<link name=\"a${(lambda: 1)()}\"/>", "lambda is not allowed"),
    "condition": ("<xacro:if value=\"${__import__('os').system('touch {marker}')}\"><link name=\"b\"/></xacro:if>",
                  "name __import__ is not allowed"),
    "macro default": ("<xacro:macro name=\"m\" params=\"x:=${python.vars(python)}\"><link name=\"${x}\"/>"
                      "</xacro:macro><xacro:m/>", "undefined name vars"),
    "$(eval)": ("<link name=\"a$(eval __import__)\"/>", "name __import__ is not allowed"),
}


def robot(folder, body, name="r.urdf.xacro"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'<robot name="r" {XACRO}>\n{body}\n<link name="base"/></robot>\n')
    return path


def refused(result, message, *traces):
    """One line, exit 2, saying message; none of traces (a marker file, a secret) left anywhere."""
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr + result.stdout
    assert message in result.stderr, result.stderr
    for trace in traces:
        if isinstance(trace, str):
            assert trace not in result.stdout + result.stderr
        else:
            assert not trace.exists(), f"{trace} was written"


@pytest.fixture
def listener():
    """A TCP socket listening on loopback: a connection made to it waits in its backlog."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def connected(server):
    try:
        server.accept()[0].close()
        return True
    except BlockingIOError:
        return False


@pytest.mark.parametrize("name", list(ESCAPES))
def test_escapes_are_refused_and_leave_no_trace(tmp_path, listener, name):
    body, message = ESCAPES[name]
    marker = tmp_path / "MARKER"
    body = body.replace("{marker}", str(marker)).replace("{port}", str(listener.getsockname()[1]))
    refused(run("info", robot(tmp_path / "robot", body)), message, marker)
    assert not connected(listener)


def test_the_escapes_are_real(tmp_path, listener):
    """Each escape above does what it says when xacro evaluates it itself, in a child process
    here: the refusals test something."""
    import xacro

    port = listener.getsockname()[1]
    for name in ("os.system", "subprocess", "open for writing", "socket"):
        marker = tmp_path / name.replace(" ", "_")
        body = ESCAPES[name][0].replace("{marker}", str(marker)).replace("{port}", str(port))
        path = robot(tmp_path / name.replace(" ", "_"), body)
        pid = os.fork()
        if pid == 0:  # xacro as installed, in a child: it prints, it may fail after the harm is done
            try:
                xacro.process_file(str(path))
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        assert connected(listener) if name == "socket" else marker.exists(), name


def test_an_arg_is_text_not_code(tmp_path):
    """xacro substitutes $(arg mass) into ${$(arg mass) * 1.0} before it evaluates it: the value is
    evaluated by rnea's interpreter like the file's own text."""
    path = robot(tmp_path / "robot", '<xacro:arg name="mass" default="1"/>\n<link name="l"><inertial>'
                 '<mass value="${$(arg mass) * 1.0}"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                 '</inertial></link><joint name="j" type="fixed"><parent link="base"/><child link="l"/></joint>')
    marker = tmp_path / "MARKER"
    for value, message in ((f'__import__("os").system("touch {marker}")', "name __import__ is not allowed"),
                           (ONE_LINE.replace("{marker}", str(marker)) + " * 0 + 1", "undefined name vars")):
        refused(run("info", path, "--xacro-arg", f"mass:={value}"), message, marker)
    info = run("info", path, "--xacro-arg", "mass:=2.5", "--format", "json")
    assert info.exit_code == 0 and json.loads(info.stdout)["total_mass"] == 2.5, info.stderr


def test_the_environment_is_read_only_where_allowed(tmp_path, monkeypatch):
    """$(env) and $(optenv) would copy a CI job's secrets into the URDF: only the variables
    RNEA_XACRO_ENV names are read."""
    monkeypatch.setenv("SECRET", "hunter2")
    monkeypatch.setenv("ROBOT_PREFIX", "left_")
    monkeypatch.delenv("RNEA_XACRO_ENV", raising=False)
    for text in ("$(env SECRET)", "$(optenv SECRET fallback)"):
        path = robot(tmp_path / "robot", f'<link name="x{text}"/>')
        refused(run("info", path), "reading the environment variable 'SECRET' is not allowed", "hunter2")
    name = "$(env ROBOT_PREFIX)$(optenv SECRET)"
    path = robot(tmp_path / "robot", f'<link name="{name}"/><joint name="j" type="fixed"><parent link="base"/>'
                 f'<child link="{name}"/></joint>')
    refused(run("info", path), "reading the environment variable 'ROBOT_PREFIX' is not allowed", "left_")
    monkeypatch.setenv("RNEA_XACRO_ENV", "ROBOT_PREFIX")
    refused(run("info", path), "reading the environment variable 'SECRET' is not allowed (RNEA_XACRO_ENV", "hunter2")
    monkeypatch.setenv("RNEA_XACRO_ENV", "ROBOT_PREFIX, SECRET")
    info = run("info", path, "--format", "json")
    assert info.exit_code == 0 and "left_hunter2" in info.stdout, info.stderr


def test_files_are_read_only_in_the_robot_folder_and_the_packages(tmp_path):
    """An include or load_yaml outside the robot's folder tree (absolute, through .., through a
    symlink) would copy /etc/passwd or a CI secret into the URDF: refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("token: hunter2\n")
    (outside / "secret.xacro").write_text(f'<robot {XACRO}><link name="hunter2"/></robot>')
    folder = tmp_path / "robot"
    folder.mkdir()
    (folder / "link").symlink_to(outside / "secret.xacro")
    for body in ('<xacro:include filename="/etc/passwd"/>',
                 f'<xacro:include filename="{outside}/secret.xacro"/>',
                 '<xacro:include filename="../outside/secret.xacro"/>',
                 '<xacro:include filename="link"/>',
                 '<xacro:include filename="../outside/*.xacro"/>',
                 '<xacro:include filename="../outside/secret.xacro" optional="true"/>',
                 f'<link name="${{xacro.load_yaml(\'{outside}/secret.yaml\').token}}"/>',
                 '<link name="${load_yaml(\'../outside/secret.yaml\').token}"/>'):
        refused(run("info", robot(folder, body)), "is not allowed: a xacro file reads only files in its own folder",
                "hunter2")
    info = run("info", robot(folder, '<xacro:include filename="l*"/>'))  # a pattern matches no file outside
    assert info.exit_code == 0 and "hunter2" not in info.stdout + info.stderr, info.stderr


def _package_and_robot(package, robot_folder, length):
    """A package 'parts' at `package` holding dims.yaml, and a robot reading it through $(find parts)."""
    package.mkdir(parents=True)
    (package / "package.xml").write_text("<package format='2'><name>parts</name></package>")
    (package / "dims.yaml").write_text(f"length: {length}\n")
    return robot(robot_folder, '<xacro:property name="dims" '
                 'value="${xacro.load_yaml(\'$(find parts)/dims.yaml\')}"/>'
                 '<link name="l"><inertial><origin xyz="${dims.length} 0 0"/><mass value="1"/></inertial></link>'
                 '<joint name="j" type="fixed"><parent link="base"/><child link="l"/></joint>')


def test_a_package_found_may_be_read(tmp_path):
    """$(find PKG) folders are readable too, and a package outside the robot's folder is one."""
    path = _package_and_robot(tmp_path / "pkg", tmp_path / "robot", 0.25)
    assert b'xyz="0.25 0 0"' in expand(path, package_paths=[tmp_path])


def test_a_relative_package_path_is_the_working_directorys(tmp_path, monkeypatch):
    """--package-path ws/src is read from where rnea runs, not from the xacro file's folder ($(find)
    gave './robot/ws/src/...', found by a review)."""
    path = _package_and_robot(tmp_path / "ws" / "src" / "pkg", tmp_path / "robot", 0.5)
    monkeypatch.chdir(tmp_path)
    assert b'xyz="0.5 0 0"' in expand(path, package_paths=["ws/src"])


def test_a_robot_named_by_a_symlink_reads_beside_itself(tmp_path):
    """The folder of the file a symlink names is the robot's too (and so is the symlink's)."""
    real = robot(tmp_path / "models", '<xacro:include filename="parts.xacro"/>')
    (tmp_path / "models" / "parts.xacro").write_text(f'<robot {XACRO}><link name="part"/>'
                                                     '<joint name="j" type="fixed"><parent link="base"/>'
                                                     '<child link="part"/></joint></robot>')
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "r.urdf.xacro").symlink_to(real)
    (tmp_path / "ws" / "parts.xacro").symlink_to(tmp_path / "models" / "parts.xacro")
    info = run("info", tmp_path / "ws" / "r.urdf.xacro")
    assert info.exit_code == 0 and "part" in info.stdout, info.stderr


def test_an_arg_the_file_does_not_declare_is_an_error(tmp_path):
    folder = tmp_path / "robot"
    folder.mkdir()
    (folder / "parts.xacro").write_text(f'<robot {XACRO}><xacro:arg name="side" default="left"/></robot>')
    path = robot(folder, '<xacro:arg name="mass" default="1"/><xacro:include filename="parts.xacro"/>')
    result = run("info", path, "--xacro-arg", "mass:=2", "--xacro-arg", "mas:=2")
    assert result.exit_code == 2 and result.stderr == \
        "rnea: error: --xacro-arg: 'mas' is not an arg of r.urdf.xacro (it declares: mass, side)\n", result.stderr
    assert run("info", path, "--xacro-arg", "side:=right", "--xacro-arg", "mass:=2").exit_code == 0


def test_an_unknown_xacro_is_refused_not_run_unguarded(tmp_path, monkeypatch):
    """The evaluator replaces xacro internals: a xacro without them is not expanded at all."""
    import xacro

    monkeypatch.delattr(xacro, "safe_eval")
    refused(run("info", robot(tmp_path, "")), "lacks xacro.safe_eval, which rnea replaces")


def test_what_robot_descriptions_use_still_works(tmp_path):
    """Macros with defaults and blocks, math, conditionals, yaml (with units) and an include beside
    the robot, a property namespace, $(arg) with a default, $(eval): values as Python computes them."""
    folder = tmp_path / "robot"
    (folder / "parts").mkdir(parents=True)
    (folder / "parts" / "dims.yaml").write_text("upper: {length: 0.5, mass: 2.0}\nangles: [!degrees 90, 30]\n"
                                                "names: [shoulder, elbow]\n")
    (folder / "parts" / "lib.xacro").write_text(f'<robot {XACRO}><xacro:property name="radius" value="0.05"/>'
                                                '</robot>')
    path = robot(folder, """
<xacro:arg name="payload" default="1.5"/>
<xacro:arg name="with_tool" default="true"/>
<xacro:include filename="parts/l*.xacro" ns="lib"/>
<xacro:property name="dims" value="${xacro.load_yaml('parts/dims.yaml')}"/>
<xacro:property name="half_pi" value="${pi/2}"/>
<xacro:macro name="seg" params="name parent m l:=${dims.upper.length} *origin">
  <link name="${name}_link"><inertial><xacro:insert_block name="origin"/><mass value="${m}"/>
    <inertia ixx="${m * lib.radius**2 / 2}" ixy="0" ixz="0" iyy="${m * l * l / 12}" iyz="0" izz="${m * l * l / 12}"/>
  </inertial></link>
  <joint name="${name}" type="revolute"><parent link="${parent}"/><child link="${name}_link"/>
    <axis xyz="0 0 1"/><limit effort="${max(10, 5 * m)}" velocity="${radians(180)}" lower="${-half_pi}"
    upper="${dims.angles[0]}"/></joint>
</xacro:macro>
<xacro:seg name="${dims.names[0]}" parent="base" m="${dims['upper'].mass}">
  <origin xyz="${dims.upper.length / 2} 0 0"/></xacro:seg>
<xacro:seg name="${dims.names[1]}" parent="shoulder_link" m="$(arg payload)" l="0.4">
  <origin xyz="${math.sqrt(0.04)} 0 0" rpy="${' '.join(str(math.radians(a)) for a in [0, dims.angles[1], 0])}"/>
</xacro:seg>
<xacro:if value="$(arg with_tool)"><link name="tool"/></xacro:if>
<xacro:unless value="${len(dims.names) == 2 and not False}"><link name="never"/></xacro:unless>
<link name="info" count="$(eval payload * 2)" kinds="${sorted(python.set(n.upper() for n in dims.names))}"
      first="${[n for n in dims.names if n.startswith('e')][0]}" pick="${'a' if 0.1 + 0.2 > 0.3 else 'b'}"/>
""")
    doc = etree.fromstring(expand(path, ["payload:=3"]))
    link, joint = doc.find("link[@name='shoulder_link']"), doc.find("joint[@name='elbow']")
    assert link.find("inertial/origin").get("xyz") == f"{0.5 / 2} 0 0"
    assert link.find("inertial/inertia").get("ixx") == str(2.0 * 0.05 ** 2 / 2)
    assert link.find("inertial/inertia").get("iyy") == str(2.0 * 0.5 * 0.5 / 12)
    elbow = doc.find("link[@name='elbow_link']/inertial")
    assert elbow.find("mass").get("value") == "3" and elbow.find("inertia").get("izz") == str(3 * 0.4 * 0.4 / 12)
    assert elbow.find("origin").get("xyz") == f"{math.sqrt(0.04)} 0 0"
    assert elbow.find("origin").get("rpy") == f"0.0 {math.radians(30)} 0.0"
    limit = joint.find("limit")
    assert (limit.get("effort"), limit.get("velocity")) == ("15", str(math.radians(180)))
    assert (limit.get("lower"), limit.get("upper")) == (str(-(math.pi / 2)), str(90.0 * (math.pi / 180.0)))
    assert doc.find("link[@name='tool']") is not None and doc.find("link[@name='never']") is None
    assert dict(doc.find("link[@name='info']").attrib) == {
        "name": "info", "count": "6", "kinds": "['ELBOW', 'SHOULDER']", "first": "elbow", "pick": "a"}


def test_the_repository_robot_expands_as_before(tmp_path):
    """robots/planar2.urdf.xacro gives the URDF it stands for (robots/planar2.urdf, forearm 1.5 kg)."""
    from conftest import ROBOTS

    info = {name: run("info", ROBOTS / name, "--format", "json") for name in ("planar2.urdf", "planar2.urdf.xacro")}
    assert all(r.exit_code == 0 for r in info.values())
    assert json.loads(info["planar2.urdf"].stdout)["joints"] == json.loads(info["planar2.urdf.xacro"].stdout)["joints"]


ALLOWED = ["1 + 2 * 3 - 4 / 5 // 1 % 3 ** 2", "-(3) + +2 - ~1", "7 << 2 | 3 & 6 ^ 1 >> 0", "1 < 2 <= 2 != 3 > -1",
           "0 or '' or 'x'", "1 and 0 and 2", "not 0", "3 if 1 > 2 else 4", "'abc'[1:]", "[1, 2, 3][::-1][0]",
           "(1, *[2, 3])", "{'a': 1, **{'b': 2}}['b']", "{1, 2} | {3}", "f'{3.14159:.2f}-{\"x\"!r}'",
           "[x * y for x in range(3) for y in (1, 2) if x != y]", "{k: v for k, v in [(1, 2), (3, 4)]}",
           "sum(x for x in range(5))", "{x % 2 for x in range(5)}", "sorted([3, 1, 2], reverse=True)",
           "max([(1, 'a'), (2, 'b')], key=len)", "'a,b'.split(',') + list(map(str, [1]))", "round(sin(pi / 6), 9)",
           "1 in [1, 2] and 3 not in (1,)", "'%s-%d' % ('x', 3)", "abs(-2) + int('4') + float('0.5')",
           "dict(a=1).get('a')", "list(dict(a=1).items())"]


@pytest.mark.parametrize("text", ALLOWED)
def test_the_interpreter_agrees_with_python(text):
    """What is allowed evaluates as Python does (Python's eval, with math, is the oracle)."""
    names = {**safe_eval.MATH, **safe_eval.BUILTINS}
    evaluator = safe_eval.Evaluator(lambda name: names[name], [v for v in names.values() if callable(v)])
    assert evaluator(text) == eval(compile(ast.parse(text, mode="eval"), "<t>", "eval"), dict(names))


@pytest.mark.parametrize("text, message", [
    ("(lambda: 1)()", "lambda"), ("(x := 1)", "assignment"), ("x.__class__", "starts with _"),
    ("_x", "starts with _"), ("'{0}'.format(1)", "attribute format of a str"), ("len.x", "attribute x of a"),
    ("(1).real", "attribute real of a int"), ("[].append(1)", "attribute append of a list"),
    ("[x for x in [1]][0].__class__", "starts with _"), ("open('f', 'w')", "undefined name open"),
    ("1 @ 2", "operator MatMult"), ("[y for (y, *z) in [[1, 2]]]", "Tuple as a comprehension target"),
])
def test_the_interpreter_refuses_the_rest(text, message):
    def lookup(name):
        if name not in ("x", "len"):
            raise NameError(f"undefined name {name}")
        return {"x": 1, "len": len}[name]

    with pytest.raises((safe_eval.Refused, NameError), match=re.escape(message)):
        safe_eval.Evaluator(lookup, [len])(text)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the sandbox is for the forked child")
def test_the_kernel_confines_the_child(tmp_path, listener, monkeypatch):
    """What the child of an expansion gives up, tried from a child after xacro_child._confine:
    writes, programs and reads outside the robot's folder and Python's (Landlock 1), TCP (Landlock 4),
    signals out (Landlock 6), any socket (seccomp), the descriptors it inherited, the environment but
    what is allowed."""
    import platform

    from rnea_cli.model import xacro_child, xacro_hooks

    abi = sandbox.landlock_abi()
    if abi == 0:
        pytest.skip("this kernel has no Landlock: only the descriptors and limits are taken away")
    folder = tmp_path / "robot"
    path = robot(folder, "")
    (tmp_path / "secret").write_text("hunter2")
    monkeypatch.setenv("SECRET", "hunter2")
    monkeypatch.setenv("ROBOT_PREFIX", "left_")
    inherited = os.open(tmp_path / "inherited", os.O_WRONLY | os.O_CREAT)
    address = listener.getsockname()  # (the listener's descriptor is closed in the child)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            xacro_child._confine(write, xacro_hooks.Files(path, {}), frozenset({"ROBOT_PREFIX"}))
            outcome = {"environment": sorted(os.environ)}
        except BaseException as exc:
            outcome = {"environment": repr(exc)}
        for name, attempt in (("write", lambda: open(folder / "new", "w")),
                              ("inherited", lambda: os.write(inherited, b"x")),
                              ("program", lambda: os.system(f"touch {tmp_path / 'ran'}") == 0 or 1 / 0),
                              ("connect", lambda: socket.create_connection(address)),
                              ("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                              ("signal", lambda: os.kill(os.getppid(), 0)),
                              ("read", lambda: path.read_text()),
                              ("read outside", lambda: (tmp_path / "secret").read_text()),
                              ("read environ", lambda: open("/proc/self/environ").read())):
            try:
                attempt()
                outcome[name] = "done"
            except Exception as exc:
                outcome[name] = type(exc).__name__
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    outcome = json.loads(os.read(read, 1 << 16))
    os.waitpid(pid, 0)
    os.close(read)
    os.close(inherited)
    assert outcome["environment"] == ["ROBOT_PREFIX"] and outcome["read"] == "done", outcome
    assert outcome["write"] == "PermissionError" and outcome["inherited"] == "OSError", outcome
    assert outcome["read outside"] == outcome["read environ"] == "PermissionError", outcome
    assert outcome["program"] == "ZeroDivisionError" and not (tmp_path / "ran").exists(), outcome
    assert not (folder / "new").exists()
    if abi >= 4:
        assert outcome["connect"] == "PermissionError" and not connected(listener), outcome
    if abi >= 6:
        assert outcome["signal"] == "PermissionError", outcome
    if platform.machine() in ("x86_64", "aarch64"):
        assert outcome["udp"] == "PermissionError", outcome


def write_xacro_package(root):
    """A ROS package with a xacro robot that includes a macro file through $(find) and takes args."""
    pkg = root / "src" / "arm_description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package format='2'><name>arm_description</name></package>")
    (pkg / "urdf" / "link.xacro").write_text("""<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="segment" params="name parent mass">
    <link name="${name}_link"><inertial><origin xyz="0.1 0 0"/><mass value="${mass}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
    <joint name="${name}" type="revolute"><parent link="${parent}"/><child link="${name}_link"/>
      <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><limit effort="50" velocity="2" lower="-3" upper="3"/></joint>
  </xacro:macro>
</robot>""")
    (pkg / "urdf" / "arm.urdf.xacro").write_text("""<?xml version="1.0"?>
<robot name="xarm" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="payload" default="1.5"/>
  <xacro:include filename="$(find arm_description)/urdf/link.xacro"/>
  <link name="base"/>
  <xacro:segment name="shoulder" parent="base" mass="${2 * 1.5}"/>
  <xacro:segment name="elbow" parent="shoulder_link" mass="$(arg payload)"/>
</robot>""")
    return pkg / "urdf" / "arm.urdf.xacro"


def test_xacro_robots_expand_with_packages_and_args(tmp_path, monkeypatch):
    robot = write_xacro_package(tmp_path)
    expanded = tmp_path / "arm.urdf"
    expanded.write_text(robot.read_text().replace("$(arg payload)", "2.5"))
    traj = tmp_path / "t.csv"
    traj.write_text("time,q_shoulder,q_elbow\n" + "".join(f"{k * 0.01!r},{0.1 * k!r},{-0.05 * k!r}\n"
                                                           for k in range(20)))
    with_xacro = torques(robot, traj, "--package-path", tmp_path, "--xacro-arg", "payload:=2.5")
    plain = write_plain(tmp_path, robot)
    assert with_xacro == torques(plain, traj)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    info = run("info", robot, "--format", "json")
    assert info.exit_code == 0 and [j["name"] for j in __import__("json").loads(info.stdout)["joints"]] == \
        ["shoulder", "elbow"]


def write_plain(tmp_path, robot):
    """The same robot written out by hand (the macro expanded, payload 2.5)."""
    seg = """<link name="{n}_link"><inertial><origin xyz="0.1 0 0"/><mass value="{m}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
    <joint name="{n}" type="revolute"><parent link="{p}"/><child link="{n}_link"/>
      <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><limit effort="50" velocity="2" lower="-3" upper="3"/></joint>"""
    path = tmp_path / "plain.urdf"
    path.write_text('<robot name="xarm"><link name="base"/>' + seg.format(n="shoulder", m=3.0, p="base")
                    + seg.format(n="elbow", m=2.5, p="shoulder_link") + "</robot>")
    return path


@pytest.mark.parametrize("body, message", [
    ('<link name="a"/><joint name="j" type="fixed"><parent link="a"/>', r"arm\.xacro:\d+: malformed XML"),
    ('<link name="${undefined_thing}"/>', r"arm\.xacro:2: xacro: undefined name undefined_thing"),
    ('<xacro:include filename="$(find nowhere_pkg)/x.xacro"/>', r"arm\.xacro:2: xacro: package nowhere_pkg not found"),
    ('<xacro:macro name="m"><xacro:m/></xacro:macro><xacro:m/>', r"arm\.xacro:\d+: macros nested too deep"),
    ('<link name="${1/0}"/>', r"arm\.xacro:2: xacro: ZeroDivisionError: division by zero"),
    ('<xacro:include filename="arm.xacro"/>', r"arm\.xacro:2: an include loop: arm\.xacro -> arm\.xacro$"),
    ('<xacro:include filename="b.xacro"/>', r"arm\.xacro:2: an include loop: arm\.xacro -> b\.xacro -> arm\.xacro$"),
    ('<xacro:include filename="../sub/arm.xacro"/>', r"\w/sub/arm\.xacro:2: an include loop: arm\.xacro -> arm\.xacro$"),
])
def test_xacro_errors_are_one_line_with_file_and_line(tmp_path, body, message):
    (tmp_path / "sub").mkdir()
    robot = tmp_path / "sub" / "arm.xacro"  # a relative include loop (sub/../sub/arm.xacro) is one too
    robot.write_text(f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n{body}\n</robot>\n')
    (tmp_path / "sub" / "b.xacro").write_text('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="b"/>'
                                      '<xacro:include filename="arm.xacro"/></robot>')
    result = run("info", os.path.relpath(robot))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert __import__("re").search(message, result.stderr.rstrip("\n")), result.stderr


def test_a_runaway_xacro_is_stopped(tmp_path, monkeypatch):
    """A macro that calls itself twice, 30 levels deep, would run for hours: it is stopped at the
    time limit (made short here, as a user would), with one line."""
    monkeypatch.setenv("RNEA_XACRO_TIMEOUT", "2")
    levels = "".join(f'<xacro:macro name="m{k}"><xacro:m{k + 1}/><xacro:m{k + 1}/></xacro:macro>' for k in range(30))
    robot = tmp_path / "tree.urdf.xacro"
    robot.write_text(f'<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">{levels}'
                     '<xacro:macro name="m30"><link name="l"/></xacro:macro><xacro:m0/></robot>')
    result = run("info", robot)
    # stopped by its CPU limit, or on a busy machine by the wall-time limit a second later: either way
    assert result.exit_code == 2 and ("xacro took more than 2 s of CPU" in result.stderr
                                      or "xacro took longer than 3 s" in result.stderr), result.stderr


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "86401", "20s", ""])
def test_a_time_limit_that_is_not_seconds_is_one_line(tmp_path, monkeypatch, seconds):
    monkeypatch.setenv("RNEA_XACRO_TIMEOUT", seconds)
    refused(run("info", robot(tmp_path, "")), "RNEA_XACRO_TIMEOUT: expected seconds, above 0 and at most 86400")
