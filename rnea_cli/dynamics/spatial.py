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


def dot(a, b):
    """a @ b for small constant arrays (1-D or 2-D), each entry summed left to right.

    `@` goes to BLAS, which picks its kernel, and with it the rounding (with or without FMA, in
    which order), by CPU and by size: the model's constants would differ in the last bit from one
    machine to the next. Element-wise products and sums in a fixed order do not."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    A = a[None] if a.ndim == 1 else a
    B = b[:, None] if b.ndim == 1 else b
    out = A[:, 0, None] * B[0]
    for k in range(1, A.shape[1]):
        out = out + A[:, k, None] * B[k]
    if b.ndim == 1:
        out = out[:, 0]
    return out[0] if a.ndim == 1 else out


def norm(x):
    """|x| of a small vector, summed in order (np.linalg.norm is BLAS's)."""
    return float(np.sqrt(dot(x, x)))


def skew(r):
    """3x3 matrix with skew(r) @ x == cross(r, x)."""
    x, y, z = r
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def beyond_max_angle(q, columns):
    """(sample, column) of the first angle of q (N, n) in `columns` beyond MAX_ANGLE (or not a
    number), or None; no copy of q is made unless there is one."""
    if not columns or not len(q):
        return None
    high, low = q.max(axis=0)[columns], q.min(axis=0)[columns]
    if (high <= MAX_ANGLE).all() and (low >= -MAX_ANGLE).all():
        return None
    k, j = divmod(int(np.argmax(~(np.abs(q[:, columns]) <= MAX_ANGLE))), len(columns))
    return k, columns[j]


def cos_sin_of(theta):
    """(cos theta, sin theta) of one angle, by `cos_sin`: the same bits on every machine."""
    c, s = cos_sin(np.array([float(theta)]), np.empty(1), np.empty(1), np.empty((5, 1)))
    return float(c[0]), float(s[0])


def rx(theta):
    """Rotation matrix of angle theta about x (columns: rotated axes in the original frame)."""
    c, s = cos_sin_of(theta)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def ry(theta):
    c, s = cos_sin_of(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rz(theta):
    c, s = cos_sin_of(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy(roll, pitch, yaw):
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    return dot(dot(rz(yaw), ry(pitch)), rx(roll))


def axis_angle(axis, theta):
    """Rotation of angle theta about the unit vector axis (Rodrigues); theta of any shape S gives S + (3, 3)."""
    K = skew(axis)
    theta = np.asarray(theta, dtype=float)
    c, s = cos_sin(theta.reshape(-1), *np.empty((2, theta.size)), np.empty((5, theta.size)))
    c, s = c.reshape(theta.shape + (1, 1)), s.reshape(theta.shape + (1, 1))
    return E3 + s * K + (1.0 - c) * dot(K, K)


def pose(R=E3, p=(0.0, 0.0, 0.0)):
    """4x4 homogeneous placement [[R, p], [0, 1]]."""
    H = np.eye(4)
    H[:3, :3] = R
    H[:3, 3] = p
    return H


def pose_inv(H):
    """Inverse of a placement: b_H_a from a_H_b."""
    R, p = H[:3, :3], H[:3, 3]
    return pose(R.T, -dot(R.T, p))


def align_z(axis):
    """A rotation A with A @ e_z == axis (unit axis): the frame in which the joint axis is z.

    Its x is e_x projected onto the plane normal to axis (e_y projected when axis is along x), so
    A is the identity for axis = e_z; a planar joint's coordinates follow this rule (docs/beyond-arms.md)."""
    z = np.asarray(axis, dtype=float)
    helper = E3[0] if abs(z[0]) < 1.0 - 1e-9 else E3[1]
    x = helper - dot(helper, z) * z
    x -= dot(x, z) * z  # once more: with e_x nearly along z the first pass cancels, and x keeps a part along z
    x /= norm(x)
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


# pi/2 in four parts; the first three have at most 26 significant bits, so k * part is exact for |k| < 2**27
MAX_ANGLE = 2.0 ** 27  # rad (21 million turns): beyond it the reduction is not exact (the engine refuses it)
PIO2 = (1.5707963109016418, 1.5893254712295857e-08, 6.123233601181349e-17, 3.9455541665632055e-24)
# FreeBSD msun's kernels: sin and cos on [-pi/4, pi/4] (k_sin.c, k_cos.c; |error| < 2**-58)
SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
       2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
       -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def cos_sin(q, c, s, d):
    """cos q, sin q into c and s (d: scratch of shape (5,) + q.shape), from +, -, * and rint only.

    numpy's tan, sin and cos are the CPU's: a SIMD kernel on one machine (AVX-512's differs from
    AVX2's in the last bit), libm on another. These are IEEE operations, each correctly rounded
    element by element, so the bits are the same on every CPU, in any chunk. The method is
    fdlibm's: q = k pi/2 + r with |r| <= pi/4 (Cody-Waite, r as a sum r0 + r1 of two doubles), the
    kernels' polynomials for sin r and cos r, and the quadrant k mod 4. For |q| <= MAX_ANGLE (k
    exact) within 2.3e-16 of libm's cos and sin, and within one ulp but near large multiples of
    pi/2, where the value is tiny and the reduction's rounding (about 1e-24 for k ~ 1e7) is more
    ulps of it; beyond MAX_ANGLE the result is not cos and sin (at 1e17, |sin| > 1), so the engine
    refuses such an angle."""
    k, r0, r1, t, w = d
    np.multiply(q, 2 / np.pi, out=k)
    np.rint(k, out=k)
    # r0 + r1 = q - k pi/2: q - k p1 is exact (Sterbenz), the rest a two-sum and small corrections
    np.multiply(k, PIO2[0], out=r0)
    np.subtract(q, r0, out=r0)
    np.multiply(k, PIO2[1], out=t)
    np.subtract(r0, t, out=r1)  # r1: the rounded difference, for now
    _two_difference_error(r0, t, r1, c, s)  # c: the error of r0 - t
    np.multiply(k, PIO2[2], out=t)
    c -= t
    np.multiply(k, PIO2[3], out=t)
    c -= t
    np.add(r1, c, out=r0)  # r0 = hi
    np.subtract(r1, r0, out=r1)
    r1 += c  # r1 = lo
    # k mod 4, after the reduction that needed k itself
    np.multiply(k, 0.25, out=t)
    np.floor(t, out=t)
    t *= -4.0
    k += t  # k mod 4, in 0..3
    _kernels(r0, r1, c, s, t, w)  # c = cos r, s = sin r
    # the quadrant, by arithmetic that is exact on these small integers (a mask would cost 30x):
    # k mod 4 = 2 h + o; sin q = (-1)^h (o ? cos r : sin r), cos q = (-1)^h' (o ? sin r : cos r),
    # h' = 1 for k mod 4 in (1, 2)
    np.multiply(k, 0.5, out=r1)
    np.floor(r1, out=r1)  # h
    np.multiply(r1, -2.0, out=t)
    t += k  # o
    np.subtract(1.0, t, out=w)  # 1 - o
    np.multiply(c, t, out=r0)  # o cos r
    np.multiply(s, t, out=t)  # o sin r
    s *= w
    s += r0
    c *= w
    c += t
    np.multiply(r1, -2.0, out=r1)
    r1 += 1.0
    s *= r1
    np.add(k, 1.0, out=w)  # h' = floor(((k + 1) mod 4) / 2)
    np.multiply(w, 0.25, out=r0)
    np.floor(r0, out=r0)
    r0 *= -4.0
    w += r0
    w *= 0.5
    np.floor(w, out=w)
    w *= -2.0
    w += 1.0
    c *= w
    np.copyto(s, q, where=q == 0.0)  # sin(-0.0) = -0.0 (the sums above lose the sign)
    return c, s


def _two_difference_error(a, b, d, t, u):
    """The exact error of d = a - b (Knuth's two-sum), into t; u: scratch."""
    np.subtract(d, a, out=u)  # -b'
    np.subtract(d, u, out=t)  # a'
    np.subtract(a, t, out=t)  # a - a'
    np.add(b, u, out=u)  # b - b'
    np.subtract(t, u, out=t)


def _kernels(x, y, c, s, z, w):
    """cos(x + y) into c and sin(x + y) into s, |x| <= pi/4, |y| tiny (k_cos.c and k_sin.c); x, z, w: scratch."""
    np.multiply(x, x, out=z)
    # sin: x - ((z (y/2 - v r) - y) - v S1), v = z x, r = S2 + z (S3 + z S4) + z w (S5 + z S6), w = z²
    np.multiply(z, SIN[5], out=s)
    s += SIN[4]
    s *= z
    np.multiply(z, z, out=w)
    s *= w
    np.multiply(z, SIN[3], out=c)
    c += SIN[2]
    c *= z
    c += SIN[1]
    s += c  # r
    np.multiply(z, x, out=w)  # v
    s *= w  # v r
    np.multiply(y, 0.5, out=c)
    np.subtract(c, s, out=s)  # y/2 - v r
    s *= z
    s -= y
    w *= SIN[0]
    s -= w
    np.subtract(x, s, out=s)
    # cos: u + (((1 - u) - z/2) + (z r - x y)), u = 1 - z/2, r = z (C1 + z (C2 + z C3)) + w² (C4 + z (C5 + z C6))
    np.multiply(z, COS[5], out=c)
    c += COS[4]
    c *= z
    c += COS[3]
    np.multiply(z, z, out=w)
    w *= w
    c *= w
    np.multiply(z, COS[2], out=w)
    w += COS[1]
    w *= z
    w += COS[0]
    w *= z
    c += w  # r
    c *= z  # z r
    np.multiply(x, y, out=w)
    c -= w  # z r - x y
    np.multiply(z, 0.5, out=z)  # z/2
    np.subtract(1.0, z, out=w)  # u
    np.subtract(1.0, w, out=x)  # 1 - u (x is not needed any more)
    x -= z
    x += c
    np.add(w, x, out=c)


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
    return dot(rot(R.T), xlt(p))


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
    I[:3, :3] = Ic + m * dot(C, C.T)
    I[:3, 3:] = m * C
    I[3:, :3] = m * C.T
    I[3:, 3:] = m * E3
    return I


def inertia_to(I, X):
    """Spatial inertia I given in b-coordinates, expressed in a-coordinates, where X = b_X_a."""
    return dot(dot(X.T, I), X)


def mass_properties(I):
    """(m, c, Ic) from a spatial inertia: inverse of mcI (c = 0 when m == 0)."""
    m = I[5, 5]
    if m == 0.0:
        return 0.0, np.zeros(3), I[:3, :3].copy()
    C = I[:3, 3:] / m
    c = np.array([C[2, 1], C[0, 2], C[1, 0]])
    return m, c, I[:3, :3] - m * dot(C, C.T)
