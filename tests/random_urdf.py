"""Random URDF trees: all joint types, oblique and negative axes, rpy origins, massless links,
rotated inertial frames, shuffled declaration order."""

import numpy as np


def _vec(v):
    return " ".join(repr(float(x)) for x in v)


def random_inertial(rng):
    """A physically valid inertial (principal moments obey the triangle inequality), rotated by rpy."""
    a, b = rng.uniform(0.01, 0.2, 2)
    moments = sorted(float(x) for x in (a, b, rng.uniform(abs(a - b), a + b)))
    mass = float(rng.uniform(0.1, 5.0))
    return (f'<inertial><origin xyz="{_vec(rng.uniform(-0.2, 0.2, 3))}" rpy="{_vec(rng.uniform(-3, 3, 3))}"/>'
            f'<mass value="{mass!r}"/>'
            f'<inertia ixx="{moments[0]!r}" ixy="0" ixz="0" iyy="{moments[1]!r}" iyz="0" izz="{moments[2]!r}"/>'
            f'</inertial>')


def random_axis(rng):
    choice = rng.integers(3)
    if choice == 0:  # axis-aligned, either sign
        axis = np.zeros(3)
        axis[rng.integers(3)] = rng.choice([-1.0, 1.0])
        return axis
    if choice == 1:  # oblique, not normalised in the file
        return rng.normal(size=3) * rng.uniform(0.5, 3.0)
    return rng.normal(size=3)


def random_urdf(seed, n_links=None, types=("revolute", "continuous", "prismatic", "fixed"), massless=0.2):
    """(xml, number of movable joints) for a random tree of links."""
    rng = np.random.default_rng(seed)
    n = int(n_links or rng.integers(2, 12))
    links, joints = [], []
    movable = 0
    for k in range(n):
        inertial = random_inertial(rng) if (k > 0 and rng.random() >= massless) else ""
        links.append(f'<link name="link{k}">{inertial}<visual><geometry><mesh filename="package://none.stl"/>'
                     f'</geometry></visual></link>')
        if k == 0:
            continue
        parent = int(rng.integers(k))
        kind = str(rng.choice(types))
        movable += kind != "fixed"
        origin = f'<origin xyz="{_vec(rng.uniform(-0.5, 0.5, 3))}" rpy="{_vec(rng.uniform(-3, 3, 3))}"/>'
        if rng.random() < 0.1:
            origin = ""
        axis = f'<axis xyz="{_vec(random_axis(rng))}"/>' if kind != "fixed" else ""
        limit = '<limit lower="-3" upper="3" effort="100" velocity="10"/>' if kind in ("revolute", "prismatic") else ""
        joints.append(f'<joint name="j{k}" type="{kind}"><parent link="link{parent}"/><child link="link{k}"/>'
                      f'{origin}{axis}{limit}</joint>')
    elements = links + joints
    rng.shuffle(elements)
    return f'<?xml version="1.0"?>\n<robot name="random{seed}">\n' + "\n".join(elements) + "\n</robot>\n", movable
