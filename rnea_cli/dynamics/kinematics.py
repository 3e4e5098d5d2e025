"""Placements of bodies in the world, and external wrenches moved into the frames the engine uses."""

import numpy as np

from . import spatial
from .engine import CHUNK
from .spatial import cos_sin, dot, quaternion_matrix


def body_placements(model, q, base_pose=None, bodies=None):
    """{body: (world_R_body (N, 3, 3), world_p_body (N, 3))} for `bodies` (default: all; -1 the root).

    q: (N, n) for all of model.joints. base_pose: (N, 7) (x, y, z, qx, qy, qz, qw) of a floating
    root; without it the root frame is the world frame. Only the bodies asked for and their
    ancestors are computed, in chunks of the engine's size."""
    wanted = list(range(-1, model.n) if bodies is None else bodies)
    out = {b: (np.empty((len(q), 3, 3)), np.empty((len(q), 3))) for b in wanted}
    for rows, chunk in _chunks(model, q, base_pose, wanted):
        for b, (R, p) in out.items():
            R[rows] = chunk[b][0].transpose(2, 0, 1)
            p[rows] = chunk[b][1].T
    return out


def _chunks(model, q, base_pose, bodies):
    """(rows, `_placements` of those rows) for chunks of the engine's size, for `bodies` and their ancestors."""
    needed = set()
    for b in bodies:
        while b >= 0 and b not in needed:
            needed.add(b)
            b = model.joints[b].parent
    steps = []  # per needed joint, parents first: (joint, its index, the constant 3x3 factors)
    for i in sorted(needed):
        joint = model.joints[i]
        R_s = joint.parent_H_stator[:3, :3]
        if joint.is_angular:
            K = spatial.skew(joint.axis)  # R_s M for M = E, K, K²
            steps.append((joint, i, (R_s, dot(R_s, K), dot(dot(R_s, K), K))))
        else:
            steps.append((joint, i, (R_s,)))
    for start in range(0, len(q), CHUNK):
        rows = slice(start, min(start + CHUNK, len(q)))
        yield rows, _placements(model, q[rows], None if base_pose is None else base_pose[rows], steps)


def _placements(model, q, base_pose, steps):
    """{body: (R (3, 3, N), p (3, N))} of the root and the bodies of `steps` (see `_chunks`), with
    the samples last, in element-wise operations (the same bits on every CPU, in any chunk). A
    revolute joint by Rodrigues' formula, R = R_parent R_stator (E + s K + (1 - c) K²) with K the
    cross-product matrix of its axis."""
    N = len(q)
    world_H_root = np.asarray(model.world_H_root)
    if base_pose is None:
        R, p = np.empty((3, 3, N)), np.zeros((3, N))
        R[:] = np.eye(3)[:, :, None]
    else:
        R = dot(world_H_root[:3, :3], quaternion_matrix(base_pose[:, 3:]).reshape(3, 3 * N)).reshape(3, 3, N)
        p = dot(world_H_root[:3, :3], base_pose[:, :3].T) + world_H_root[:3, 3:]
    placements = {-1: (R, p)}
    angular = [i for joint, i, _ in steps if joint.is_angular]
    c, s = np.empty((2, len(angular), N))
    cos_sin(q[:, angular].T, c, s, np.empty((5, len(angular), N)))
    k = 0  # row of c, s
    for joint, i, M in steps:
        R_p, p_p = placements[joint.parent]
        p = p_p + _rotate(R_p, joint.parent_H_stator[:3, 3])  # p_p + R_p t_s
        R = _times(R_p, M[0])
        if joint.is_angular:
            R += _times(R_p, M[1]) * s[k]
            R += _times(R_p, M[2]) * (1.0 - c[k])
            k += 1
        else:
            p += _rotate(R, joint.axis) * q[:, i]
        placements[i] = (R, p)
    return placements


def _times(R, M):
    """R M for rotations R (3, 3, N) and a constant M (3, 3), summed in order."""
    out = np.empty_like(R)
    for b in range(3):
        out[:, b] = R[:, 0] * M[0, b]
        out[:, b] += R[:, 1] * M[1, b]
        out[:, b] += R[:, 2] * M[2, b]
    return out


def _rotate(R, x):
    """R x (3, N) for rotations R (3, 3, N) and a constant vector x."""
    return R[:, 0] * x[0] + R[:, 1] * x[1] + R[:, 2] * x[2]


def _rotate_back(R, x):
    """R^T x (3, N) for rotations R (3, 3, N) and vectors x (3, N)."""
    return R[0] * x[0] + R[1] * x[1] + R[2] * x[2]


def link_wrenches_to_bodies(model, wrenches, frame, q=None, base_pose=None):
    """External wrenches on links -> {body: (N, 6) [n; f] in the body frame, about its origin}.

    wrenches: {link: (wrench (N, 6) [n; f], point (N, 3) or None)}. frame 'link': the wrench is in
    the link's frame and the point (default: the link origin) in link coordinates; frame 'world':
    both in world coordinates (default point: the link origin, wherever it is). 'world' needs q
    (N, n) and, for a floating base, base_pose."""
    links = {link.name: link for link in model.links}
    if frame == "world" and wrenches:
        return _world_wrenches(model, [(links[name], w, at) for name, (w, at) in wrenches.items()], q, base_pose)
    out = {}
    for name, (wrench, point) in wrenches.items():
        link = links[name]
        R_bl, p_bl = link.body_H_link[:3, :3], link.body_H_link[:3, 3]
        n, f = wrench[:, :3], wrench[:, 3:]
        if point is not None:
            n = n + np.cross(point, f)  # moment about the link origin
        f_b = dot(f, R_bl.T)
        n_b = dot(n, R_bl.T) + np.cross(p_bl, f_b)
        total = np.concatenate([n_b, f_b], axis=1)
        out[link.body] = out[link.body] + total if link.body in out else total
    return out


def _world_wrenches(model, wrenches, q, base_pose):
    """`link_wrenches_to_bodies` for world-frame wrenches [(link, wrench, point)], chunk by chunk."""
    out = {link.body: np.zeros((len(q), 6)) for link, _, _ in wrenches}
    for rows, placements in _chunks(model, q, base_pose, list(out)):
        for link, wrench, point in wrenches:
            R, p = placements[link.body]  # (3, 3, N), (3, N)
            n, f = wrench[rows, :3].T, wrench[rows, 3:].T
            if point is None:  # at the link origin
                r = _rotate(R, link.body_H_link[:3, 3])  # R p_bl
            else:
                r = point[rows].T - p
            n = n + np.cross(r, f, axis=0)  # moment about the body origin, world coordinates
            W = out[link.body][rows]
            W[:, :3] += _rotate_back(R, n).T
            W[:, 3:] += _rotate_back(R, f).T
    return out
