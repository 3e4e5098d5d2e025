"""What `rnea info` shows: the facts of a robot as plain data, and its tree of links and joints."""

from ..text import fmt


def robot_facts(model):
    """Everything `rnea info` shows, as plain data (the JSON output)."""
    from .limits import joint_limits

    _, limit_notes = joint_limits(model)
    carried = model.subtree_mass()
    warnings = list(model.warnings)
    for i, joint in enumerate(model.joints):
        if carried[i] == 0:
            warnings.append(f"{joint.name}: moves only massless links (zero row in the mass matrix)")
        lim = joint.limits
        missing = [k for k in ("effort", "velocity") if getattr(lim, k) is None]
        if joint.type != "continuous" and (lim.lower is None or lim.upper is None):
            missing.append("position")
        if missing:
            warnings.append(f"{joint.name}: no {', '.join(missing)} limit")
    warnings += limit_notes
    parts = {}  # URDF joint -> its coordinates (several for a planar joint)
    for i, j in enumerate(model.joints):
        parts.setdefault(j.urdf_joint or j.name, []).append((i, j))
    tree_joints = []
    for tj in model.tree:
        entry = {"name": tj.name, "type": tj.type, "parent_link": tj.parent_link, "child_link": tj.child_link}
        if tj.name in parts:
            (i, j), last = parts[tj.name][0], parts[tj.name][-1][1]
            lim = j.limits
            entry.update({
                "index": i, "coordinates": [p.name for _, p in parts[tj.name]],
                "axis": [float(x) for x in last.axis],  # for a planar joint, the plane's normal
                "limits": {"lower": lim.lower, "upper": lim.upper, "effort": lim.effort, "velocity": lim.velocity},
                "damping": j.damping, "friction": j.friction, "carried_mass": float(carried[i]),
                "mimic": None if j.mimic is None else {"joint": j.mimic.joint, "multiplier": j.mimic.multiplier,
                                                       "offset": j.mimic.offset},
            })
        tree_joints.append(entry)
    heads = {model.root_link: -1} | {j.child_link: i for i, j in enumerate(model.joints)}
    links = []
    for link in model.links:
        entry = {"name": link.name, "mass": link.mass,
                 "body": None if link.body < 0 else model.joints[link.body].name}
        if link.name in heads:
            entry["body_mass"] = model.body_mass(heads[link.name])
        links.append(entry)
    return {
        "robot": model.name, "file": model.source, "root_link": model.root_link, "dof": model.n,
        "floating": model.floating,
        "total_mass": model.body_mass(-1) + sum(model.body_mass(i) for i in range(model.n)),
        "joint_names": model.joint_names, "links": links, "joints": tree_joints, "warnings": warnings,
    }


INDENT = 2  # characters per level of the tree
DEEPEST = 30  # levels drawn by indentation; deeper lines say their depth instead


def robot_tree(facts):
    """The tree as lines of text: each link, and under it the joints to its children (fixed links
    folded in), every one of them however deep (depth past DEEPEST is written, not indented)."""
    from ..errors import printable

    links = {link["name"]: link for link in facts["links"]}
    by_parent = {}
    for joint in facts["joints"]:
        by_parent.setdefault(joint["parent_link"], []).append(joint)

    def label(name):
        link = links[name]
        if "body_mass" in link:
            return f"{name}  {link['body_mass']:.4g} kg" + (
                f" (own {link['mass']:.4g} kg + fixed links)" if link["body_mass"] != link["mass"] else "")
        return f"{name}  {link['mass']:.4g} kg, folded into its parent body"

    def joint_label(j):
        if j["type"] in ("fixed", "floating"):
            return f"{j['name']} ({j['type']})"
        lim = j["limits"]
        parts = [f"{j['name']} {j['type']}", "axis " + " ".join(f"{x:.4g}" for x in j["axis"])]
        if len(j["coordinates"]) > 1:
            parts.insert(1, "coordinates " + ", ".join(j["coordinates"]))
        if lim["lower"] is not None or lim["upper"] is not None:
            parts.append(f"range [{fmt(lim['lower'])}, {fmt(lim['upper'])}]")
        parts.append(f"effort {fmt(lim['effort'])}, velocity {fmt(lim['velocity'])}")
        if j["mimic"]:
            parts.append(f"mimics {j['mimic']['joint']}")
        return ", ".join(parts)

    lines = []

    def add(depth, text, joint=False):
        indent = " " * (INDENT * min(depth, DEEPEST))
        mark = f"[depth {depth}] " if depth > DEEPEST else ""
        lines.append(printable(f"{indent}{'└─ ' if joint else ''}{mark}{text}", 2000))

    floating = [j for j in facts["joints"] if j["type"] == "floating"]
    depth = 0
    if floating:  # the world link, the floating joint, then the root body
        add(0, f"{floating[0]['parent_link']} (the world)")
        add(1, joint_label(floating[0]), joint=True)
        depth = 2
    stack = [("link", facts["root_link"], depth)]  # depth first, children in declaration order
    while stack:
        kind, item, level = stack.pop()
        if kind == "link":
            add(level, label(item))
            stack.extend(("joint", joint, level + 1) for joint in reversed(by_parent.get(item, [])))
        else:
            add(level, joint_label(item), joint=True)
            stack.append(("link", item["child_link"], level + 1))
    return lines
