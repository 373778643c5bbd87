"""What a call may pass to a definition read as text: parameters of functions, fields of records.

Only what can be known for certain is answered; anything else is None (silence, never a
guess): a decorator that may change a signature, a class whose bases cannot all be read,
a metaclass, ``__new__``, or a dataclass option that changes its ``__init__``.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, replace

from omni_port.pyast.definitions import (
    Target,
    class_member,
)
from omni_port.pyast.packages import (
    FUNCTIONS,
    Class,
    World,
    class_hierarchy,
    dotted_name,
    import_target,
)
from omni_port.pyast.syntax import find_def

#: Decorators that keep the signature of the function they wrap (last dotted part).
_KEEP_SIGNATURE = frozenset(
    {"abstractmethod", "override", "cache", "lru_cache", "inference_mode", "no_grad"}
    | {"contextmanager", "asynccontextmanager", "deprecated", "final"}
)


class Binding(enum.Enum):
    """How a function is reached, which decides whether its first parameter is filled."""

    PLAIN = "plain"
    """A function, or a method through its class (``Class.method(self, ...)``)."""
    INSTANCE = "instance"
    """A method through an instance (``self.method(...)``, ``super().method(...)``)."""


class RecordKind(enum.Enum):
    """Classes whose constructor is generated from their annotated fields."""

    NONE = "none"
    """Any other class."""
    NAMEDTUPLE = "namedtuple"
    """A ``typing.NamedTuple``."""
    DATACLASS = "dataclass"
    """A stdlib ``@dataclass`` and no other decorator."""


class Noun(enum.StrEnum):
    """What the slots of a signature are called in reports."""

    PARAMETER = "parameter"
    FIELD = "field"


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter (or field) a call may fill."""

    name: str
    #: Whether it may be passed by position.
    positional: bool
    #: Whether it may be passed by keyword.
    keyword: bool
    #: Whether a call must fill it (no default).
    required: bool


@dataclass(frozen=True, slots=True)
class Signature:
    """Everything a call to one definition may pass."""

    #: The definition, e.g. ``pkg.mod.Class.method``, for reports.
    name: str
    #: Its module and line, for reports.
    module: str
    line: int
    #: Parameters of a function, fields of a record.
    noun: Noun
    #: In binding order: positional ones first, keyword-only ones last.
    params: tuple[Param, ...]
    #: ``*args`` / ``**kwargs`` accepted.
    varargs: bool = False
    varkw: bool = False
    #: Instances unpack into the fields, in order (a NamedTuple).
    tuple_fields: bool = False

    @property
    def positional(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.positional)

    def named(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


def call_signature(world: World, target: Target, binding: Binding) -> Signature | None:
    """What a call of ``target`` reached through ``binding`` may pass; None when unknown."""
    if isinstance(target.node, FUNCTIONS):
        return function_signature(target, binding)
    if isinstance(target.node, ast.ClassDef):
        return constructor_signature(world, Class(target.module, target.node))
    return None


def function_signature(target: Target, binding: Binding) -> Signature | None:
    """The parameters of a function or method, the bound one dropped; None when a decorator
    may change them (``property`` or anything not known to keep a signature)."""
    node = target.node
    if not isinstance(node, FUNCTIONS):
        return None
    names = [_decorator_name(d) for d in node.decorator_list]
    if any(n not in _KEEP_SIGNATURE | {"staticmethod", "classmethod"} for n in names):
        return None
    drop = target.owner is not None and "staticmethod" not in names
    drop = drop and (binding is Binding.INSTANCE or "classmethod" in names)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    firsts = len(positional) - len(args.defaults)
    params = [
        Param(a.arg, True, i >= len(args.posonlyargs), i < firsts) for i, a in enumerate(positional)
    ]
    params += [
        Param(a.arg, False, True, default is None)
        for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if drop:
        if not positional:
            return None
        params = params[1:]
    return Signature(
        target.qualified,
        target.module,
        node.lineno,
        Noun.PARAMETER,
        tuple(params),
        args.vararg is not None,
        args.kwarg is not None,
    )


def _decorator_name(node: ast.expr) -> str:
    expr = node.func if isinstance(node, ast.Call) else node
    return dotted_name(expr).rpartition(".")[2] or "?"


# --- classes --------------------------------------------------------------------------------


def constructor_signature(world: World, cls: Class) -> Signature | None:
    """What ``cls(...)`` may pass: a NamedTuple's or dataclass's fields, else the ``__init__``
    found along its bases; None when any of that cannot be known."""
    fields = record_fields(world, cls)
    if fields is not None:
        return fields
    own_init = find_def(cls.node.body, "__init__")
    if _record_kind(world, cls) is RecordKind.DATACLASS and isinstance(own_init, FUNCTIONS):
        return _init_signature(cls, Target(cls.module, own_init, cls.node))
    if cls.node.decorator_list or cls.node.keywords:
        return None
    hierarchy = class_hierarchy(world, cls)
    if hierarchy.unknown or any(_is_record(world, c) for c in hierarchy.classes):
        return None
    if class_member(hierarchy, "__new__") is not None:
        return None
    init = class_member(hierarchy, "__init__")
    return _init_signature(cls, init) if init is not None else None


def _init_signature(cls: Class, init: Target) -> Signature | None:
    """``cls(...)`` as its ``__init__`` takes it, named after the class."""
    found = function_signature(init, Binding.INSTANCE)
    return replace(found, name=f"{cls.module}.{cls.node.name}") if found is not None else None


def record_fields(world: World, cls: Class) -> Signature | None:
    """The fields of a NamedTuple or a dataclass as constructor parameters; None for any
    other class, or when its fields cannot be known for certain."""
    kind = _record_kind(world, cls)
    if kind is RecordKind.NAMEDTUPLE:
        params = tuple(
            Param(name, True, True, value is None) for name, value, _ in _annotated(cls.node)
        )
        return replace(_fields_signature(cls, params), tuple_fields=True)
    if kind is not RecordKind.DATACLASS:
        return None
    hierarchy = class_hierarchy(world, cls)
    if hierarchy.unknown:
        return None
    by_name: dict[str, Param] = {}
    for base in reversed(hierarchy.classes):
        if _record_kind(world, base) is RecordKind.DATACLASS:
            # A field redefined in a subclass keeps its first place, as in dataclasses.
            for param in _dataclass_params(base.node) or ():
                by_name[param.name] = param
        elif _defines_init(base.node) or _annotated(base.node):
            return None
    if _defines_init(cls.node) or _dataclass_params(cls.node) is None:
        return None
    ordered = sorted(by_name.values(), key=lambda p: not p.positional)  # keyword-only last
    return _fields_signature(cls, tuple(ordered))


def _fields_signature(cls: Class, params: tuple[Param, ...]) -> Signature:
    name = f"{cls.module}.{cls.node.name}"
    return Signature(name, cls.module, cls.node.lineno, Noun.FIELD, params)


def _is_record(world: World, cls: Class) -> bool:
    return _record_kind(world, cls) is not RecordKind.NONE


def _record_kind(world: World, cls: Class) -> RecordKind:
    if any(dotted_name(b).rpartition(".")[2] == "NamedTuple" for b in cls.node.bases):
        return RecordKind.NAMEDTUPLE
    for decorator in cls.node.decorator_list:
        expr = decorator.func if isinstance(decorator, ast.Call) else decorator
        if dotted_name(expr) == "dataclasses.dataclass":
            return RecordKind.DATACLASS
        tree = world.tree(cls.module)
        name = dotted_name(expr)
        if tree is not None and isinstance(expr, ast.Name):
            name = import_target(tree, expr.id, world.package_of(cls.module)) or ""
        if name == "dataclasses.dataclass":
            # Any other decorator may rewrite the class or its ``__init__``.
            only = len(cls.node.decorator_list) == 1
            return RecordKind.DATACLASS if only else RecordKind.NONE
    return RecordKind.NONE


def _annotated(node: ast.ClassDef) -> list[tuple[str, ast.expr | None, ast.expr]]:
    """Class-level ``name: annotation [= value]`` lines, in order: (name, value, annotation)."""
    return [
        (stmt.target.id, stmt.value, stmt.annotation)
        for stmt in node.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
    ]


def _defines_init(node: ast.ClassDef) -> bool:
    return any(isinstance(s, FUNCTIONS) and s.name == "__init__" for s in node.body)


def _dataclass_params(node: ast.ClassDef) -> list[Param] | None:
    """A dataclass's own fields; None when an option makes its ``__init__`` unknown."""
    options = _dataclass_options(node)
    if options is None or options.get("init") is False:
        return None
    kw_only = options.get("kw_only") is True
    params = []
    for name, value, annotation in _annotated(node):
        text = ast.unparse(annotation)
        if "ClassVar" in text:
            continue
        if "KW_ONLY" in text:
            kw_only = True
            continue
        field = _field_call(value)
        if field is not None:
            if any(k.arg is None for k in field.keywords):
                return None
            words = {k.arg: k.value for k in field.keywords}
            if _is_false(words.get("init")):
                continue
            required = "default" not in words and "default_factory" not in words
            keyword_only = kw_only or _is_true(words.get("kw_only"))
        else:
            required, keyword_only = value is None, kw_only
        params.append(Param(name, not keyword_only, True, required))
    return params


def _dataclass_options(node: ast.ClassDef) -> dict[str, bool] | None:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and dotted_name(decorator.func).endswith("dataclass"):
            options = {}
            for keyword in decorator.keywords:
                if keyword.arg is None or not isinstance(keyword.value, ast.Constant):
                    return None
                options[keyword.arg] = bool(keyword.value.value)
            return options
    return {}


def _field_call(value: ast.expr | None) -> ast.Call | None:
    if isinstance(value, ast.Call) and dotted_name(value.func).rpartition(".")[2] == "field":
        return value
    return None


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _is_false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False
