"""Placements of bodies in the world, and external wrenches moved into the frames the engine uses."""

import numpy as np

from . import spatial
from .engine import CHUNK
from .spatial import cos_sin, quaternion_matrix


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
            # R_p R_s M for M = E, K, K²: row a of each is M^T R_s^T (row a of R_p), one (9, 3) by (3, N) product per a
            K = spatial.skew(joint.axis)
            steps.append((joint, i, np.vstack([R_s.T, (R_s @ K).T, (R_s @ K @ K).T])))
        else:
            steps.append((joint, i, R_s.T))
    for start in range(0, len(q), CHUNK):
        rows = slice(start, min(start + CHUNK, len(q)))
        yield rows, _placements(model, q[rows], None if base_pose is None else base_pose[rows], steps)


def _placements(model, q, base_pose, steps):
    """{body: (R (3, 3, N), p (3, N))} of the root and the bodies of `steps` (see `_chunks`), with
    the samples last: each step is a few BLAS products of 3x3 constants by (3, N) rows, or a pass
    over whole rows. A revolute joint by Rodrigues' formula, R = R_parent R_stator (E + s K + (1 - c) K²)
    with K the cross-product matrix of its axis."""
    N = len(q)
    world_H_root = np.asarray(model.world_H_root)
    if base_pose is None:
        R, p = np.empty((3, 3, N)), np.zeros((3, N))
        R[:] = np.eye(3)[:, :, None]  # a broadcast view would not go to BLAS
    else:
        R = (world_H_root[:3, :3] @ quaternion_matrix(base_pose[:, 3:]).reshape(3, 3 * N)).reshape(3, 3, N)
        p = world_H_root[:3, :3] @ base_pose[:, :3].T + world_H_root[:3, 3:]
    placements = {-1: (R, p)}
    angular = [i for joint, i, _ in steps if joint.is_angular]
    c, s, d = np.empty((3, len(angular), N))
    cos_sin(q[:, angular].T, c, s, d)
    RM = np.empty((3, 9, N))  # scratch
    k = 0  # row of c, s
    for joint, i, M in steps:
        R_p, p_p = placements[joint.parent]
        p = p_p + np.matmul(joint.parent_H_stator[:3, 3], R_p)  # p_p + R_p t_s
        if joint.is_angular:
            np.matmul(M, R_p, out=RM)
            R = RM[:, 3:6] * s[k]
            R += RM[:, 0:3]
            RM[:, 6:9] *= 1.0 - c[k]
            R += RM[:, 6:9]
            k += 1
        else:
            R = np.matmul(M, R_p)
            p += np.matmul(joint.axis, R) * q[:, i]
        placements[i] = (R, p)
    return placements


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
        f_b = f @ R_bl.T
        n_b = n @ R_bl.T + np.cross(p_bl, f_b)
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
                r = np.matmul(link.body_H_link[:3, 3], R)  # R p_bl
            else:
                r = point[rows].T - p
            n = n + np.cross(r, f, axis=0)  # moment about the body origin, world coordinates
            W = out[link.body][rows]
            W[:, :3] += np.einsum("abk,ak->kb", R, n)  # R^T n
            W[:, 3:] += np.einsum("abk,ak->kb", R, f)
    return out
