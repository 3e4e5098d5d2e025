"""YAML and JSON documents read strictly and within bounds (trajectories, --limits, --actuators).

Both formats give the same answers as CSV: a number is written as CSV writes one (no `1_0`, no
`0x10`, no sexagesimal `1:30`), a key may appear once in a mapping, and a document may be at most
MAX_BYTES long, MAX_DEPTH deep, and hold no more values than it has bytes (+ EXPANSION) once its YAML aliases
are expanded.
"""

import functools
import json
import math
import re

from ..errors import RneaError, shown

MAX_BYTES = 1 << 26  # 64 MiB of text: larger trajectories belong in CSV or Parquet, which stream
MAX_DEPTH = 32
EXPANSION = 1000  # values beyond one per byte of text, counting each use of a YAML alias
NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
DIGITS = 300  # an integer longer than this is read as a float (it is infinite or exact anyway)


def read_text(stream, label, error=RneaError):
    """The bytes of a document, at most MAX_BYTES."""
    try:
        with stream:
            data = stream.read(MAX_BYTES + 1)
    except OSError as exc:
        raise error(label, None, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise error(label, None, f"larger than {MAX_BYTES >> 20} MiB; YAML and JSON are read whole: use CSV or "
                                 "Parquet for long trajectories")
    return data


def load(data, label, fmt, error=RneaError):
    """The document in `data` (bytes), 'yaml' or 'json', checked against the bounds above."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise error(label, None, "the file is UTF-16 text; rnea reads UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(label, f"line {line}", "not UTF-8 text") from None
    try:
        doc = _load_json(text, label, error) if fmt == "json" else _load_yaml(text, label, error)
    except RecursionError:
        raise error(label, None, f"nested too deep (more than {MAX_DEPTH} levels)") from None
    _check_size(doc, label, error, len(data) + EXPANSION)
    return doc


def _load_json(text, label, error):
    def pairs(items):
        seen = {}
        for key, value in items:
            if key in seen:
                raise _Duplicate(key)
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=_integer, parse_constant=float)
    except json.JSONDecodeError as exc:
        raise error(label, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}") from None
    except _Duplicate as exc:
        raise error(label, None, f"invalid JSON: key {shown(exc.args[0])} appears twice in one object") from None


class _Duplicate(Exception):
    pass


def _integer(text):
    """An int, exact; a float when too long for one, or for a negative zero (whose sign an int drops)."""
    if len(text) > DIGITS or (text.startswith("-") and not text.lstrip("-+0")):
        return float(text)
    return int(text)


def _load_yaml(text, label, error):
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise error(label, where, f"invalid YAML: {problem}") from None


@functools.cache
def _loader():
    """A SafeLoader (libyaml's where built) whose numbers are CSV's and whose mappings refuse a
    key given twice (a class, built once when first needed: pyyaml is imported only then)."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    INT, FLOAT, MERGE = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:merge"

    class StrictLoader(base):
        yaml_implicit_resolvers = {  # YAML 1.1's, but for numbers
            first: [(tag, regexp) for tag, regexp in resolvers if tag not in (INT, FLOAT)]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

        def construct_mapping(self, node, deep=False):
            """The mapping, its keys each given once; `<<: *defaults` (or a list of them) merged
            under its own keys, the first of a list winning, as YAML's merge key has it (done here:
            PyYAML's own merging differs between its versions, and before 6.0.4 expands nested
            merges exponentially). A merged mapping is built once, and checked, as any other."""
            error = yaml.constructor.ConstructorError
            merges = [(key_node, value) for key_node, value in node.value if key_node.tag == MERGE]
            own = [(key_node, value) for key_node, value in node.value if key_node.tag != MERGE]
            if len(merges) > 1:
                raise error(None, None, "key '<<' appears twice in one mapping", merges[1][0].start_mark)
            merged = {}
            if merges:
                value = merges[0][1]
                for source in reversed(value.value if isinstance(value, yaml.SequenceNode) else [value]):
                    if not isinstance(source, yaml.MappingNode):
                        raise error(None, None, "'<<' merges mappings only", source.start_mark)
                    merged.update(self.construct_object(source, deep=True))
            self._once(own)
            return merged | super().construct_mapping(yaml.MappingNode(node.tag, own, node.start_mark, node.end_mark),
                                                      deep)

        def _once(self, pairs):
            """Refuse a key given twice."""
            error = yaml.constructor.ConstructorError
            seen = set()
            for key_node, _ in pairs:
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    duplicate = False
                if duplicate:
                    raise error(None, None, f"key {shown(key)} appears twice in one mapping", key_node.start_mark)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    seen.add(key)

    StrictLoader.add_implicit_resolver(INT, re.compile(r"^[-+]?[0-9]+$"), list("-+0123456789"))
    StrictLoader.add_implicit_resolver(
        FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                          r"|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))
    StrictLoader.add_constructor(INT, lambda loader, node: _integer(loader.construct_scalar(node)))
    StrictLoader.add_constructor(FLOAT, lambda loader, node: _yaml_float(loader.construct_scalar(node)))
    return StrictLoader


def _yaml_float(text):
    lowered = text.lower().lstrip("+-")
    if lowered in (".inf", ".nan"):
        return math.copysign(math.inf, -1.0 if text.startswith("-") else 1.0) if lowered == ".inf" else math.nan
    return float(text)


def _check_size(doc, label, error, most):
    """Depth at most MAX_DEPTH and at most `most` values, counting aliased ones each time."""
    count, stack = 0, [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > most:
            raise error(label, None, f"more values than it has bytes once its aliases are expanded (more than "
                                     f"{most:,}): an alias bomb?")
        if isinstance(node, (dict, list)):
            if depth > MAX_DEPTH:
                raise error(label, None, f"nested too deep (more than {MAX_DEPTH} levels)")
            items = node.values() if isinstance(node, dict) else node
            count += len(node) if isinstance(node, dict) else 0  # the keys
            stack.extend((x, depth + 1) for x in items)


def number(x):
    """x as a float if it is a finite number, else None. A string counts if it is written as a
    number (quoted in the file); booleans do not."""
    if isinstance(x, bool):
        return None
    if isinstance(x, str):
        if not NUMBER.fullmatch(x.strip()):
            return None
        x = float(x)
    if not isinstance(x, (int, float)):
        return None
    try:
        value = float(x)
    except OverflowError:
        return None
    return value if math.isfinite(value) else None


def why_not_a_number(x):
    """Why number(x) is None, for a message: 'missing', 'not finite: inf', "not a number: 'abc'"."""
    if x is None:
        return "missing"
    if isinstance(x, (list, dict)):
        return f"not a number: a {'list' if isinstance(x, list) else 'mapping'} of {len(x)} entries"
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return f"not finite: {x!r}" if isinstance(x, float) else "not finite: an integer too large"
    if isinstance(x, str) and NUMBER.fullmatch(x.strip()):
        return f"not finite: {shown(x)}"
    return f"not a number: {shown(x)}"
