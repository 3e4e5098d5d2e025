"""ROBOT in: a URDF file, or a xacro file expanded first (xacro_expand.py)."""

from .urdf import load_urdf

XACRO_SUFFIXES = (".xacro",)


def is_xacro(path):
    return str(path).lower().endswith(XACRO_SUFFIXES)


def load_robot(path, *, xacro_args=(), package_paths=(), fixed_joints=False):
    """The Model of a URDF or xacro file. xacro_args: 'NAME:=VALUE' strings; package_paths:
    folders searched for package.xml files, for $(find PKG)."""
    if is_xacro(path):
        from .xacro_expand import expand

        return load_urdf(expand(path, xacro_args, package_paths), fixed_joints=fixed_joints,
                         label=f"{path} (expanded by xacro)")
    return load_urdf(path, fixed_joints=fixed_joints)
