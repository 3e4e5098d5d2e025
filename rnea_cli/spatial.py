"""Spatial (6D) algebra after Featherstone, *Rigid Body Dynamics Algorithms* (2008), ch. 2.

Every 6-vector here is ordered **[angular; linear]**: a motion vector is [w; v], a force vector
is [n; f]. (Pinocchio orders [linear; angular]; tests reorder explicitly when comparing.)

Names carry their frames: `a_H_b` is a 4x4 placement `[[R, p], [0, 1]]`, the pose of frame b in
frame a (the URDF `<origin>` of a joint is `parent_H_stator`); `b_X_a` is a 6x6 Plücker transform
mapping motion vectors from a-coordinates to b-coordinates. `xup(a_H_b)` is `b_X_a`
(Featherstone's `X = rot(E) xlt(r)` with `E = R^T`, `r = p`); force vectors map back with `b_X_a^T`.
"""

import numpy as np

E3 = np.eye(3)


def skew(r):
    """3x3 matrix with skew(r) @ x == cross(r, x)."""
    x, y, z = r
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rx(theta):
    """Rotation matrix of angle theta about x (columns: rotated axes in the original frame)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def ry(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rz(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy(roll, pitch, yaw):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return rz(yaw) @ ry(pitch) @ rx(roll)


def axis_angle(axis, theta):
    """Rotation of angle theta about the unit vector axis (Rodrigues); theta of any shape S gives S + (3, 3)."""
    K = skew(axis)
    theta = np.asarray(theta, dtype=float)[..., None, None]
    return E3 + np.sin(theta) * K + (1.0 - np.cos(theta)) * (K @ K)


def pose(R=E3, p=(0.0, 0.0, 0.0)):
    """4x4 homogeneous placement [[R, p], [0, 1]]."""
    H = np.eye(4)
    H[:3, :3] = R
    H[:3, 3] = p
    return H


def pose_inv(H):
    """Inverse of a placement: b_H_a from a_H_b."""
    R, p = H[:3, :3], H[:3, 3]
    return pose(R.T, -R.T @ p)


def align_z(axis):
    """A rotation A with A @ e_z == axis (unit axis): the frame in which the joint axis is z.

    Its x is e_x projected onto the plane normal to axis (e_y projected when axis is along x), so
    A is the identity for axis = e_z; a planar joint's coordinates follow this rule (README)."""
    z = np.asarray(axis, dtype=float)
    helper = E3[0] if abs(z[0]) < 1.0 - 1e-9 else E3[1]
    x = helper - (helper @ z) * z
    x -= (x @ z) * z  # once more: with e_x nearly along z the first pass cancels, and x keeps a part along z
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def quaternion_matrix(quat):
    """Rotation matrices (3, 3, N), the samples last, from unit quaternions (N, 4) ordered (x, y, z, w)."""
    x, y, z, w = quat.T
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def cos_sin(q, c, s, d):
    """cos q, sin q into c, s (d: scratch, all of q's shape) from t = tan(q/2):
    c = (1 - t²)/(1 + t²), s = 2t/(1 + t²).

    numpy's float64 tan is a SIMD kernel where the CPU has one, while sin and cos call libm one
    value at a time (benchmarks/README.md has the numbers). Both results are within 1 ulp of cos
    and sin (tested for |q| up to 1e6); q = ±pi gives t ~ 1.6e16, c = -1, s ~ 1.2e-16."""
    t = np.multiply(q, 0.5, out=s)
    np.tan(t, out=t)
    np.multiply(t, t, out=c)
    np.add(c, 1.0, out=d)
    np.reciprocal(d, out=d)
    np.subtract(1.0, c, out=c)
    c *= d
    t *= 2.0
    t *= d
    return c, s


def rot(E):
    """Plücker rotation: coordinates change by the 3x3 matrix E (Featherstone `rot`)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    return X


def xlt(r):
    """Plücker translation of the origin by r (Featherstone `xlt`)."""
    X = np.eye(6)
    X[3:, :3] = -skew(r)
    return X


def xup(H):
    """b_X_a (motion, a-coords -> b-coords) from the placement a_H_b: rot(R^T) @ xlt(p)."""
    R, p = H[:3, :3], H[:3, 3]
    return rot(R.T) @ xlt(p)


def crm(v):
    """Motion cross-product matrix: crm(v) @ m == v x m."""
    w, u = v[:3], v[3:]
    X = np.zeros((6, 6))
    X[:3, :3] = skew(w)
    X[3:, :3] = skew(u)
    X[3:, 3:] = skew(w)
    return X


def crf(v):
    """Force cross-product matrix: crf(v) @ f == v x* f == -crm(v).T @ f."""
    return -crm(v).T


def mcI(m, c, Ic):
    """Spatial inertia from mass m, centre of mass c and rotational inertia Ic about c."""
    C = skew(c)
    I = np.zeros((6, 6))
    I[:3, :3] = Ic + m * C @ C.T
    I[:3, 3:] = m * C
    I[3:, :3] = m * C.T
    I[3:, 3:] = m * E3
    return I


def inertia_to(I, X):
    """Spatial inertia I given in b-coordinates, expressed in a-coordinates, where X = b_X_a."""
    return X.T @ I @ X


def mass_properties(I):
    """(m, c, Ic) from a spatial inertia: inverse of mcI (c = 0 when m == 0)."""
    m = I[5, 5]
    if m == 0.0:
        return 0.0, np.zeros(3), I[:3, :3].copy()
    C = I[:3, 3:] / m
    c = np.array([C[2, 1], C[0, 2], C[1, 0]])
    return m, c, I[:3, :3] - m * C @ C.T
