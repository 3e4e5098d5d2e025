"""Placements of bodies in the world, and external wrenches moved into the frames the engine uses."""

import numpy as np

from .rnea import quaternion_matrix


def body_placements(model, q, base_pose=None):
    """world_H_body for every body: (N, n + 1, 4, 4), the root body last (index -1).

    q: (N, n) for all of model.joints. base_pose: (N, 7) (x, y, z, qx, qy, qz, qw) of a floating
    root; without it the root frame is the world frame."""
    N = len(q)
    H = np.empty((N, model.n + 1, 4, 4))
    if base_pose is None:
        H[:, -1] = np.eye(4)
    else:
        root = np.broadcast_to(np.eye(4), (N, 4, 4)).copy()
        root[:, :3, :3] = quaternion_matrix(base_pose[:, 3:])
        root[:, :3, 3] = base_pose[:, :3]
        H[:, -1] = model.world_X_root @ root
    for i, joint in enumerate(model.joints):
        H[:, i] = H[:, joint.parent] @ model.placement(i, q[:, i])
    return H


def link_wrenches_to_bodies(model, wrenches, frame, q=None, base_pose=None):
    """External wrenches on links -> {body: (N, 6) [n; f] in the body frame, about its origin}.

    wrenches: {link: (wrench (N, 6) [n; f], point (N, 3) or None)}. frame 'link': the wrench is in
    the link's frame and the point (default: the link origin) in link coordinates; frame 'world':
    both in world coordinates (default point: the link origin, wherever it is). 'world' needs q
    (N, n) and, for a floating base, base_pose."""
    links = {link.name: link for link in model.links}
    H = body_placements(model, q, base_pose) if frame == "world" and wrenches else None
    out = {}
    for name, (wrench, point) in wrenches.items():
        link = links[name]
        b_H_l = link.body_H_link
        R_bl, p_bl = b_H_l[:3, :3], b_H_l[:3, 3]
        n, f = wrench[:, :3], wrench[:, 3:]
        if frame == "link":
            if point is not None:
                n = n + np.cross(point, f)  # moment about the link origin
            f_b = f @ R_bl.T
            n_b = n @ R_bl.T + np.cross(p_bl, f_b)
        else:
            world_H_b = H[:, link.body]
            R, p = world_H_b[:, :3, :3], world_H_b[:, :3, 3]
            if point is None:
                point = p + np.einsum("kab,b->ka", R, p_bl)  # the link origin in the world
            n_w = n + np.cross(point - p, f)  # moment about the body origin, world coordinates
            f_b = np.einsum("kab,ka->kb", R, f)  # R^T f
            n_b = np.einsum("kab,ka->kb", R, n_w)
        total = np.concatenate([n_b, f_b], axis=1)
        out[link.body] = out[link.body] + total if link.body in out else total
    return out
