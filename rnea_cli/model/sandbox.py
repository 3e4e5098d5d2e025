"""What the kernel can take away from a process that expands a xacro file: writing files, reading
outside the robot's folders, running programs, sockets, signals to other processes — as far as this
kernel allows, and silently less where it does not (the expressions are already evaluated by rnea's
own interpreter, safe_eval.py; this is the second wall).

Always (POSIX): the file descriptors other than the result's pipe are closed and stdin, stdout and
stderr point at /dev/null (an inherited descriptor is writable whatever the rules), files may not
grow (RLIMIT_FSIZE 0), no core file, no new process for a user other than root (RLIMIT_NPROC 0).
Linux: no_new_privs (a setuid program gains nothing), and Landlock (Linux 5.13 and later, where the
kernel has it enabled): no file written, created, removed, renamed or truncated anywhere, no program
executed, and files read only beneath the folders given (the robot's, its packages') and Python's own
(ABI 1-3); no TCP bind or connect (ABI 4, Linux 6.7); no connection to an abstract Unix socket and no
signal to a process outside (ABI 6, Linux 6.12). And a seccomp filter (Linux 3.5 and later, x86-64
and arm64) for what Landlock does not see: no socket at all (UDP, a Unix socket by path such as
docker's), no program executed, no ptrace or process_vm_readv/writev, no io_uring.
"""

import ctypes
import os
import signal
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the generic numbers (x86-64, arm64, ...)
_PATH_BENEATH = 1  # LANDLOCK_RULE_PATH_BENEATH
_VERSION = 1  # LANDLOCK_CREATE_RULESET_VERSION
_PR_SET_NO_NEW_PRIVS = 38
_FS = {1: 0b1_1111_1111_1111, 2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # ABI -> the file access bits it adds
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3
_NET_TCP = 0b11  # LANDLOCK_ACCESS_NET_BIND_TCP | CONNECT_TCP, ABI 4
_SCOPES = 0b11  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SIGNAL, ABI 6
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
# machine: (AUDIT_ARCH_*, the syscalls refused: socket, execve, execveat, ptrace, process_vm_readv,
# process_vm_writev, io_uring_setup)
_SECCOMP = {"x86_64": (0xC000003E, (41, 59, 322, 101, 310, 311, 425)),
            "aarch64": (0xC00000B7, (198, 221, 281, 117, 270, 271, 425))}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def confine(keep, readable):
    """Take away from this process what it does not need to expand xacro; keep: the one
    descriptor (besides 0-2) left open; readable: the folders whose files it may read, besides
    Python's. Returns (the Landlock ABI in force, 0 for none; whether the seccomp filter is)."""
    _descriptors(keep)
    import resource

    for limit in ("RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NPROC"):
        if hasattr(resource, limit):
            try:
                resource.setrlimit(getattr(resource, limit), (0, 0))
            except (OSError, ValueError):
                pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past RLIMIT_FSIZE fails (EFBIG), not a signal
    if not sys.platform.startswith("linux"):
        return 0, False
    libc = _libc()
    if libc is None or libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return 0, False
    return _landlock(libc, [*readable, *_python_folders()]), _seccomp(libc)


def _python_folders():
    """Where this Python reads its modules: its prefixes and sys.path (not the working folder)."""
    here = os.path.realpath(os.getcwd())
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sys.path}
    return sorted(f for f in folders if f and os.path.realpath(f) != here and os.path.exists(f))


def landlock_abi():
    """The Landlock ABI version this kernel offers, 0 when none (or not Linux)."""
    libc = _libc() if sys.platform.startswith("linux") else None
    if libc is None:
        return 0
    return max(libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION)), 0)


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def _descriptors(keep):
    """Close every descriptor but keep, and point 0-2 at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)
    os.closerange(3, keep)
    os.closerange(keep + 1, _open_limit())


def _open_limit():
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 1 << 20)
    except (OSError, ValueError):
        return 1 << 16


def _landlock(libc, readable):
    """Restrict this process (and what it starts) with a Landlock ruleset that handles every file
    access, TCP and the scopes this ABI has, and allows only reading beneath the readable paths."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    attr = _RulesetAttr(sum(bits for since, bits in _FS.items() if abi >= since),
                        _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24  # the struct as this ABI knows it
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return 0
    try:
        for path in readable:
            _allow_reading(libc, ruleset, path)
        if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return 0
    finally:
        os.close(ruleset)
    return abi


def _seccomp(libc):
    """A seccomp filter refusing (EACCES) the syscalls of _SECCOMP, and every syscall of another
    ABI than this machine's (i386 on x86-64, x32): True where it is in force."""
    import platform

    if platform.machine() not in _SECCOMP:
        return False
    arch, refused = _SECCOMP[platform.machine()]
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 13  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
    n = len(refused)
    program = [(load, 0, 0, 4), (jeq, 0, n + 3, arch),  # seccomp_data.arch: another ABI, refused
               (load, 0, 0, 0), (jge, n + 1, 0, 0x40000000),  # seccomp_data.nr; x32's, refused
               *((jeq, n - k, 0, number) for k, number in enumerate(refused)),
               (ret, 0, 0, allow), (ret, 0, 0, deny)]
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    fprog = _SockFprog(len(program), filters)
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0


def _allow_reading(libc, ruleset, path):
    """A rule of the ruleset: reading path (a folder: its files and folders beneath) is allowed."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone: nothing to read there
    try:
        access = _READ_FILE | (_READ_DIR if os.path.isdir(path) else 0)
        rule = _PathBeneathAttr(access, fd)
        libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_PATH_BENEATH), ctypes.byref(rule),
                     ctypes.c_uint32(0))
    finally:
        os.close(fd)
