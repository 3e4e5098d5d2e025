"""The expressions of a xacro file (`${...}`, `$(eval ...)`), evaluated without Python's eval.

xacro hands every expression to Python's eval with the builtins removed and names starting with
`__` refused; that is no sandbox: `python.type`, `python.vars` and an object's attributes reach every
class and from there os.system. Here an expression is parsed with ast and walked by a small
interpreter that knows only what a robot description needs: literals (numbers, strings, lists,
tuples, dicts, sets), arithmetic, comparison and boolean operators, `a if c else b`, subscripts and
slices, f-strings, comprehensions, names of properties, and calls of a fixed set of pure functions
(math's, a few builtins, xacro's own). Attribute access is allowed only on the namespaces
(`math.pi`, `python.len`, `xacro.load_yaml`, the properties of an include with ns=), on a dictionary
loaded by xacro.load_yaml (`props.a`, as xacro allows), and for a few methods of strings, lists and
dicts (`s.split()`, `d.items()`; not `str.format`, which reads attributes). Nothing whose name
starts with `_` is reachable, and no lambda: a value the interpreter makes is data or one of the
listed functions, so there is nothing to escape through.
"""

import ast
import math
import operator

BUILTINS = {f.__name__: f for f in (
    abs, all, any, bool, complex, dict, divmod, enumerate, filter, float, frozenset, hash, int, isinstance,
    issubclass, len, list, map, max, min, ord, pow, range, repr, reversed, round, set, slice, sorted, str, sum,
    tuple, zip)}
MATH = {name: value for name, value in vars(math).items() if not name.startswith("_")}
METHODS = {  # the methods callable on a value, by its base type: pure, none reads an attribute
    str: {"capitalize", "center", "count", "endswith", "find", "isalnum", "isalpha", "isdigit", "islower",
          "isspace", "isupper", "join", "ljust", "lower", "lstrip", "partition", "replace", "rfind", "rjust",
          "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title",
          "upper", "zfill"},
    list: {"count", "index"},
    tuple: {"count", "index"},
    dict: {"get", "items", "keys", "values"},
}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg, ast.Not: operator.not_, ast.Invert: operator.invert}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


class Refused(Exception):
    """An expression that uses what rnea does not evaluate (an attribute, a name, a construct)."""


class Namespace:
    """Names reached with a dot or a string subscript (`math.pi`, `ns.prop`, `ns['prop']`): what
    lookup(name) gives (raising NameError), nothing else."""

    def __init__(self, lookup):
        self.lookup = lookup

    @classmethod
    def of(cls, names):
        """The namespace of a fixed dict of names."""
        names = dict(names)

        def lookup(name):
            if name not in names:
                raise NameError(f"name '{name}' is not defined", name=name)
            return names[name]

        return cls(lookup)


class Method:
    """A listed method of a str, list, tuple or dict bound to its value (`'a b'.split`)."""

    def __init__(self, function, value):
        self.function, self.value = function, value

    def __call__(self, *args, **kwargs):
        return self.function(self.value, *args, **kwargs)


UNKNOWN = object()  # what an attribute hook answers for a value it has no say on


class Evaluator:
    """Evaluates expression text. lookup(name) gives a property's value or a listed function,
    raising NameError; attribute(value, key) gives `value.key` and `value['key']` for the
    namespaces and objects of the caller, else UNKNOWN (and then only the listed methods and the
    items of plain containers are reachable); functions: every callable an expression may call."""

    def __init__(self, lookup, functions, attribute=lambda value, key: UNKNOWN):
        self.lookup, self.attribute = lookup, attribute
        self.functions = frozenset(functions)

    def __call__(self, text):
        try:
            tree = ast.parse(text.strip(), "<expression>", mode="eval")
        except SyntaxError as exc:
            raise Refused(f"invalid expression: {exc.msg}") from None
        return self.eval(tree.body, {})

    def eval(self, node, local):
        """The value of node; local: the names bound by the comprehensions around it."""
        handler = getattr(self, "do_" + type(node).__name__, None)
        if handler is None:
            raise Refused(f"{_construct(node)} is not allowed in a xacro expression")
        return handler(node, local)

    def do_Constant(self, node, local):
        return node.value

    def do_Name(self, node, local):
        name = _allowed(node.id)
        if name in local:
            return local[name]
        return self.data(self.lookup(name))

    def do_Attribute(self, node, local):
        value, name = self.eval(node.value, local), _allowed(node.attr)
        if isinstance(value, Namespace):
            return self.data(value.lookup(name))
        found = self.attribute(value, name)
        if found is not UNKNOWN:
            return self.data(found)
        for kind, methods in METHODS.items():
            if isinstance(value, kind) and name in methods:
                return Method(getattr(kind, name), value)
        raise Refused(f"attribute {name} of a {_kind(value)} is not allowed in a xacro expression")

    def do_Call(self, node, local):
        function = self.eval(node.func, local)
        if not isinstance(function, Method) and not self._listed(function):
            raise Refused(f"calling a {_kind(function)} is not allowed in a xacro expression")
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                args.extend(self.eval(arg.value, local))
            else:
                args.append(self.eval(arg, local))
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                kwargs.update(self.eval(keyword.value, local))
            else:
                kwargs[keyword.arg] = self.eval(keyword.value, local)
        return function(*args, **kwargs)

    def data(self, value):
        """value, which a name or a namespace gave: data or a function listed, never an object to escape by."""
        if callable(value) and not isinstance(value, Method) and not self._listed(value):
            raise Refused(f"a {_kind(value)} is not allowed in a xacro expression")
        return value

    def _listed(self, function):
        try:
            return function in self.functions
        except TypeError:  # not hashable: no function of ours
            return False

    def do_BinOp(self, node, local):
        operation = _BINARY.get(type(node.op))
        if operation is None:
            raise Refused(f"operator {type(node.op).__name__} is not allowed in a xacro expression")
        return operation(self.eval(node.left, local), self.eval(node.right, local))

    def do_UnaryOp(self, node, local):
        return _UNARY[type(node.op)](self.eval(node.operand, local))

    def do_BoolOp(self, node, local):
        value = None
        for operand in node.values:
            value = self.eval(operand, local)
            if isinstance(node.op, ast.And) != bool(value):
                return value
        return value

    def do_Compare(self, node, local):
        left = self.eval(node.left, local)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, local)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def do_IfExp(self, node, local):
        return self.eval(node.body if self.eval(node.test, local) else node.orelse, local)

    def do_Subscript(self, node, local):
        value, key = self.eval(node.value, local), self.eval(node.slice, local)
        if isinstance(value, Namespace):
            if not isinstance(key, str) or not key.isidentifier():
                raise Refused(f"{key!r} is not a name, for a namespace")
            return self.data(value.lookup(_allowed(key)))
        found = self.attribute(value, key) if isinstance(key, str) else UNKNOWN
        if found is not UNKNOWN:  # a yaml dictionary
            return self.data(found)
        if isinstance(value, (str, bytes, list, tuple, range, dict)):
            return value[key]
        raise Refused(f"subscript of a {_kind(value)} is not allowed in a xacro expression")

    def do_Slice(self, node, local):
        return slice(*(None if part is None else self.eval(part, local)
                       for part in (node.lower, node.upper, node.step)))

    def _items(self, nodes, local):
        for item in nodes:
            if isinstance(item, ast.Starred):
                yield from self.eval(item.value, local)
            else:
                yield self.eval(item, local)

    def do_List(self, node, local):
        return list(self._items(node.elts, local))

    def do_Tuple(self, node, local):
        return tuple(self._items(node.elts, local))

    def do_Set(self, node, local):
        return set(self._items(node.elts, local))

    def do_Dict(self, node, local):
        result = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                result.update(self.eval(value, local))
            else:
                result[self.eval(key, local)] = self.eval(value, local)
        return result

    def do_JoinedStr(self, node, local):
        return "".join(str(self.eval(part, local)) for part in node.values)

    def do_FormattedValue(self, node, local):
        value = self.eval(node.value, local)
        if node.conversion != -1:  # !s, !r, !a
            value = {ord("s"): str, ord("r"): repr, ord("a"): ascii}[node.conversion](value)
        spec = "" if node.format_spec is None else self.eval(node.format_spec, local)
        if not isinstance(value, (int, float, complex, str)):  # format() of a number or a string only
            value = str(value)
        return format(value, spec)

    def do_ListComp(self, node, local):
        return [self.eval(node.elt, scope) for scope in self._scopes(node.generators, 0, local)]

    do_GeneratorExp = do_ListComp  # evaluated at once: sum(x for x in xs) is the same

    def do_SetComp(self, node, local):
        return {self.eval(node.elt, scope) for scope in self._scopes(node.generators, 0, local)}

    def do_DictComp(self, node, local):
        return {self.eval(node.key, scope): self.eval(node.value, scope)
                for scope in self._scopes(node.generators, 0, local)}

    def _scopes(self, generators, k, local):
        """The bindings of `for ... in ... if ...` clauses k and after, each a new local scope."""
        if k == len(generators):
            yield local
            return
        clause = generators[k]
        if clause.is_async:
            raise Refused("async is not allowed in a xacro expression")
        for item in self.eval(clause.iter, local):
            scope = dict(local)
            _bind(clause.target, item, scope)
            if all(self.eval(condition, scope) for condition in clause.ifs):
                yield from self._scopes(generators, k + 1, scope)


def _bind(target, value, scope):
    """scope[name] = value for a comprehension's target, a name or a tuple of names."""
    if isinstance(target, ast.Name):
        scope[_allowed(target.id)] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(t, ast.Starred) for t in target.elts):
        values = list(value)
        if len(values) != len(target.elts):
            raise ValueError(f"cannot unpack {len(values)} values into {len(target.elts)}")
        for part, item in zip(target.elts, values):
            _bind(part, item, scope)
    else:
        raise Refused(f"{_construct(target)} as a comprehension target is not allowed in a xacro expression")


def _allowed(name):
    if name.startswith("_"):
        raise Refused(f"name {name} is not allowed in a xacro expression (it starts with _)")
    return name


def _construct(node):
    return {"Lambda": "lambda", "NamedExpr": "an assignment (:=)", "Await": "await", "Yield": "yield",
            "YieldFrom": "yield", "Starred": "a starred expression"}.get(type(node).__name__, type(node).__name__)


def _kind(value):
    return type(value).__name__
