"""`rnea identify`: inertial parameters and friction from measured effort, written back as a URDF."""

import functools
import json

import click

from .common import engine_threads, make_console, open_run, say
from .options import quiet_option, trajectory_options
from .group import main


@main.command()
@functools.partial(trajectory_options, batch=False)
@click.option("-o", "--output", metavar="FILE", help="Write the identified URDF here (the robot's file with only "
                                                     "<inertial> and <dynamics> changed).")
@click.option("--effort-is", type=click.Choice(["torque", "current"]), default="torque", show_default=True,
              help="What the measured effort is: joint torque/force, or motor current (times torque_constant, "
                   "gear_ratio and efficiency of --actuators).")
@click.option("--actuators", "actuators_file", metavar="FILE", help="YAML per joint: torque_constant, gear_ratio, "
                                                                    "efficiency, for --effort-is current.")
@click.option("--links", metavar="LINK,...", help="Identify only these links (10 parameters each, in the link's "
                                                   "frame: a payload fixed on the tool), the rest of the robot held "
                                                   "at the URDF's values.")
@click.option("--no-friction", is_flag=True, help="Identify no friction (no viscous and Coulomb term per joint).")
@click.option("--min-speed", type=float, default=None, metavar="V",
              help="A joint's samples slower than this (rad/s, m/s) are left out of its equations, where "
                   "sign(q̇) is no model of its friction (default: 0.01, or 1 % of the joint's velocity limit where "
                   "that is lower; 0: none left out; with --no-friction none are).")
@click.option("--offset", is_flag=True, help="Add a constant effort per joint (a sensor's offset).")
@click.option("--armature", is_flag=True, help="Add a rotor inertia per joint (effort armature * qdd).")
@click.option("--prior-weight", type=float, default=None, metavar="W",
              help="Strength of the pull toward the URDF's values where the data say little (default 30: known "
                   "to about 18 %; with --links 0, their values being a guess; 0: none).")
@click.option("--ols", is_flag=True, help="Plain least-squares base parameters instead, for comparison (writes no "
                                          "URDF: they need not be physically consistent).")
@click.option("--validate", multiple=True, metavar="TRAJ",
              help="A run not fitted: its RMS residual before and after (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@quiet_option
def identify(trajectory, output, effort_is, actuators_file, links, no_friction, min_speed, offset, armature,
             prior_weight, ols, validate, fmt, quiet, **options):
    """Identify the robot's inertial parameters (10 per body; with --links, only those links', the
    rest held at the URDF's) and joint friction from measured effort (TRAJ...: runs with
    effort_<joint> columns, a bag's JointState effort, a preset's torque or current), physically
    consistent, leaning on the URDF's values only where the data say little."""
    from ..run.answers import identify as ident
    from .common import destination, run_options
    from ..errors import RneaError
    from ..outputs.identified_urdf import identified_urdf
    from ..model.robot import is_xacro

    if ols and output:
        raise click.BadParameter("--ols gives base parameters to compare, not a URDF: drop -o", param_hint="--ols")
    if min_speed is not None and not 0 <= min_speed <= 1e30:
        raise click.BadParameter(f"{min_speed!r} is not a speed from 0 to 1e30", param_hint="--min-speed")
    if prior_weight is not None and not 0 <= prior_weight <= 1e12:
        raise click.BadParameter(f"{prior_weight!r} is not a number from 0 to 1e12 (1e12: the URDF's values as good "
                                 "as known)", param_hint="--prior-weight")
    if output and is_xacro(options["robot"]):
        raise RneaError(options["robot"], None, "a xacro robot cannot be written back with its macros: identify "
                                                "its expanded URDF (xacro robot.urdf.xacro > robot.urdf)")
    names = None if links is None else [name.strip() for name in links.split(",")]
    if names is not None and not all(names):
        raise click.BadParameter(f"{links!r} has an empty link name (LINK,LINK,...)", param_hint="--links")
    if effort_is == "torque" and actuators_file:
        raise click.BadParameter("--actuators is read for --effort-is current only", param_hint="--actuators")
    console = make_console(quiet=quiet)

    def opener(path, opts, before_reading):  # the library's run, shown as it goes
        return open_run(dict(options, trajectory=path), console, quiet=quiet, actuators=opts.actuators, effort=True,
                        before_reading=before_reading)

    found = ident.identify_runs(options["robot"], trajectory, run_options(options), friction=not no_friction,
                                offset=offset, armature=armature, links=names, min_speed=min_speed,
                                prior_weight=prior_weight, least_squares=ols, validate=validate, effort_is=effort_is,
                                actuators=actuators_file, threads=engine_threads(), opener=opener)
    model, base, normal, fit, checks = found.model, found.base, found.normal, found.fit, found.validation
    if output:
        text = identified_urdf(options["robot"], model, base.layout, fit.theta)
        with destination(output) as stream:
            stream.write(text if isinstance(text, bytes) else text.encode())
    report = _report(model, base, normal, fit, checks, ols)
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, allow_nan=False))
    else:
        for line in _text(report):
            say(make_console(stderr=False), line)


def _report(model, base, normal, fit, checks, ols):
    """What the fit found, as plain data (the JSON; the text is made of it)."""
    import numpy as np

    from ..run.answers import identify as ident

    layout = base.layout
    names = [model.joints[i].name for i in layout.leaders]
    prior = layout.parameters()
    blocks = range(len(layout.blocks))
    friction = layout.row_friction(fit.theta)
    moved = []  # by the change over the body's own scale of that parameter (m, m L, m L²)
    inverse = np.concatenate([ident.prior_scale(prior[10 * b:10 * b + 10]) for b in blocks])
    for k, name in enumerate(layout.names[:layout.inertial]):
        moved.append((abs(fit.theta[k] - prior[k]) * inverse[k], name, float(prior[k]), float(fit.theta[k])))
    moved.sort(reverse=True)
    links = _links(model, base, normal, fit) if layout.links else []
    return {
        "method": "ols" if ols else "consistent",
        "samples": normal.count, "rank": base.rank,
        "condition": float(fit.condition) if np.isfinite(fit.condition) else None,  # None: not determined
        "joints": [{"joint": j, "samples": int(normal.rows[r]), "rms_before": float(fit.rms_before[r]),
                    "rms_after": float(fit.rms_after[r]), "friction": friction[r]}
                   | ({"followers": [model.joints[i].name for i, _ in equation[1:]]} if len(equation) > 1 else {})
                   for r, (j, equation) in enumerate(zip(names, layout.equations))],
        "moved_most": [{"parameter": name, "urdf": before, "identified": after}
                       for _, name, before, after in moved[:8] if before != after],
        "base_parameters": [{"combination": text, "value": float(value),
                             "standard_error": float(se) if np.isfinite(se) else None}
                            for text, value, se in zip(base.names(), fit.beta, fit.se)],
        "validation": checks,
        "consistent": all(ident.consistent(fit.theta[10 * k:10 * k + 10]) for k in blocks),
        "unchanged_bodies": int(np.sum([np.array_equal(fit.theta[10 * k:10 * k + 10], prior[10 * k:10 * k + 10])
                                        for k in blocks])),
    } | ({"links": links} if layout.links else {})


def _links(model, base, normal, fit):
    """Per link named: its mass, centre of mass and inertia about it (in the link's frame) in the
    URDF and identified, with standard errors (None where the data do not determine them)."""
    from ..run.answers import identify as ident

    prior, out = base.layout.parameters(), []
    rows = {row.name: row for row in model.links}
    for k, found in enumerate(ident.links_found(normal, base, fit)):
        written = rows[found.link].as_written  # the URDF's own numbers, not recomputed from pi
        urdf = ident.mass_properties(prior[10 * k:10 * k + 10]) if written is None else (
            float(written[0]), tuple(map(float, written[1])),
            tuple(float(written[2]["xyz".index(e[1]), "xyz".index(e[2])]) for e in ident.INERTIA_ENTRIES))
        moving = model.joints[base.layout.blocks[k].body].child_link
        out.append({
            "link": found.link, "moves_with": found.body, "fixed_to": None if moving == found.link else moving,
            "identified_parameters": found.identified,
            "mass": {"urdf": urdf[0], "identified": found.mass, "standard_error": found.mass_se},
            "com": {"urdf": list(urdf[1]), "identified": list(found.com), "standard_error": list(found.com_se)},
            "inertia": {key: dict(zip(ident.INERTIA_ENTRIES, values)) for key, values in
                        (("urdf", urdf[2]), ("identified", found.inertia), ("standard_error", found.inertia_se))},
        })
    return out


def _text(report):
    condition = "inf: the run does not determine them all" if report["condition"] is None else (
        f"{report['condition']:.4g}")
    yield (f"{report['samples']} samples; {report['rank']} base parameters; condition number of the weighted "
           f"base regressor {condition}; " + ("ordinary least squares (--ols)" if report["method"] ==
                                                            "ols" else "physically consistent estimate"))
    yield "joint: RMS residual URDF -> identified; friction"
    for j in report["joints"]:
        friction = ", ".join(f"{t} {v:.6g}" for t, v in j["friction"].items())
        pair = f" (with {', '.join(j['followers'])}, mimic)" if "followers" in j else ""
        yield (f"  {j['joint']}{pair}: {j['rms_before']:.6g} -> {j['rms_after']:.6g}"
               + (f"; {friction}" if friction else ""))
    for check in report["validation"]:
        yield f"validation on {check['trajectory']} ({check['samples']} samples, not fitted):"
        for j, before, after in zip(report["joints"], check["rms_before"], check["rms_after"]):
            yield f"  {j['joint']}: {before:.6g} -> {after:.6g}"
    if report["moved_most"]:
        yield "moved most (URDF -> identified):"
        for m in report["moved_most"]:
            yield f"  {m['parameter']}: {m['urdf']:.6g} -> {m['identified']:.6g}"
    for link in report.get("links", []):
        yield from _link_text(link)
    yield "base parameters (value ± standard error):"
    for b in report["base_parameters"]:
        se = "?" if b["standard_error"] is None else f"{b['standard_error']:.2g}"
        yield f"  {b['combination']} = {b['value']:.6g} ± {se}"


def _link_text(link):
    """The text of one link's entry in the report."""
    def change(urdf, found, se):
        return f"{urdf:.6g} -> {found:.6g} ± " + ("?" if se is None else f"{se:.2g}")

    where = (f"fixed to {link['fixed_to']}, " if link["fixed_to"] else "") + f"moved by {link['moves_with']}"
    unknown = "" if link["identified_parameters"] == 10 else "; ? where the data do not determine it"
    yield (f"{link['link']} ({where}; {link['identified_parameters']} of its 10 parameters identified{unknown}): "
           "URDF -> identified ± standard error")
    mass, com, inertia = link["mass"], link["com"], link["inertia"]
    yield f"  mass: {change(mass['urdf'], mass['identified'], mass['standard_error'])} kg"
    yield "  centre of mass (link frame): " + ", ".join(
        f"{axis} {change(*values)}" for axis, *values in zip("xyz", com["urdf"], com["identified"],
                                                            com["standard_error"])) + " m"
    yield "  inertia about it (link frame): " + ", ".join(
        f"{key} {change(inertia['urdf'][key], inertia['identified'][key], inertia['standard_error'][key])}"
        for key in inertia["urdf"]) + " kg m²"
