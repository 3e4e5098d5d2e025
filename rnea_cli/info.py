"""What `rnea info` shows: the facts of a robot as plain data, and its tree of links and joints."""

from .report import fmt


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


def robot_tree(facts):
    """A Rich tree: links, and under each the joints to its children (fixed links folded in)."""
    from rich.markup import escape
    from rich.tree import Tree

    links = {link["name"]: link for link in facts["links"]}
    by_parent = {}
    for joint in facts["joints"]:
        by_parent.setdefault(joint["parent_link"], []).append(joint)

    def label(name):
        link = links[name]
        if "body_mass" in link:
            return f"[bold]{escape(name)}[/]  {link['body_mass']:.4g} kg" + (
                f" [dim](own {link['mass']:.4g} kg + fixed links)[/]" if link["body_mass"] != link["mass"] else "")
        return f"{escape(name)}  [dim]{link['mass']:.4g} kg, folded into its parent body[/]"

    def joint_label(j):
        if j["type"] in ("fixed", "floating"):
            return f"[dim]{escape(j['name'])} ({j['type']})[/]"
        lim = j["limits"]
        parts = [f"[cyan]{escape(j['name'])}[/] {j['type']}", "axis " + " ".join(f"{x:.4g}" for x in j["axis"])]
        if len(j["coordinates"]) > 1:
            parts.insert(1, "coordinates " + ", ".join(escape(c) for c in j["coordinates"]))
        if lim["lower"] is not None or lim["upper"] is not None:
            parts.append(f"range [{fmt(lim['lower'])}, {fmt(lim['upper'])}]")
        parts.append(f"effort {fmt(lim['effort'])}, velocity {fmt(lim['velocity'])}")
        if j["mimic"]:
            parts.append(f"mimics {escape(j['mimic']['joint'])}")
        return ", ".join(parts)

    floating = [j for j in facts["joints"] if j["type"] == "floating"]
    if floating:  # the world link, the floating joint, then the root body
        top = Tree(f"{escape(floating[0]['parent_link'])} [dim](the world)[/]")
        root = top.add(joint_label(floating[0])).add(label(facts["root_link"]))
    else:
        top = root = Tree(label(facts["root_link"]))
    stack = [(facts["root_link"], root)]
    while stack:
        name, node = stack.pop()
        for joint in by_parent.get(name, []):
            child = node.add(joint_label(joint)).add(label(joint["child_link"]))
            stack.append((joint["child_link"], child))
    return top
