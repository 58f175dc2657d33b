"""The sandbox policy's tables: the modules a program may import, and the names, attributes and special methods
it may not use (:mod:`tools.sandbox_policy` applies them; the restricted builtins reuse the first four)."""

from __future__ import annotations

ALLOWED_MODULES = frozenset(
    {
        "math", "statistics", "itertools", "functools", "collections", "datetime", "time", "re", "json",
        "random", "fractions", "decimal", "string", "heapq", "bisect", "operator",
    }
)  # fmt: skip
ALLOWED_SUBMODULES = frozenset({"collections.abc"})

BLOCKED_NAMES = frozenset(
    {
        "eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "getattr", "setattr",
        "delattr", "breakpoint", "input", "help", "exit", "quit",
    }
)  # fmt: skip
# Members of allowed modules that read attributes by string, evaluate strings, or hand out internals.
BLOCKED_ATTRS = frozenset(
    {"attrgetter", "methodcaller", "Formatter", "update_wrapper", "singledispatch", "singledispatchmethod"}
)
FRAME_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "f_lasti", "f_lineno"})
FRAME_PREFIXES = ("gi_", "cr_", "ag_", "tb_", "co_")
SAFE_DUNDER_ATTRS = frozenset(
    {
        "__name__", "__qualname__", "__doc__",
        "__init__", "__new__", "__init_subclass__", "__post_init__", "__repr__", "__str__", "__hash__", "__bool__",
        "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
        "__len__", "__iter__", "__next__", "__reversed__", "__contains__", "__getitem__", "__setitem__",
        "__delitem__", "__missing__", "__call__", "__enter__", "__exit__",
        "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__",
        "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
        "__rpow__", "__neg__", "__pos__", "__abs__", "__int__", "__float__", "__round__", "__index__",
    }
)  # fmt: skip
BLOCKED_CLASS_DUNDERS = frozenset({"__match_args__", "__builtins__", "__class__", "__dict__"})
# Special names a class body may define (``def`` or assignment): the data model's operator and protocol hooks.
# Anything else is refused, the attribute and copy hooks below with their own reason.
CLASS_DUNDERS = SAFE_DUNDER_ATTRS | frozenset(
    {
        "__module__", "__slots__", "__del__", "__bytes__", "__format__", "__sizeof__", "__dir__",
        "__length_hint__", "__await__", "__aiter__", "__anext__", "__aenter__", "__aexit__",
        "__matmul__", "__rmatmul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
        "__divmod__", "__rdivmod__", "__lshift__", "__rlshift__", "__ilshift__", "__rshift__", "__rrshift__",
        "__irshift__", "__and__", "__rand__", "__iand__", "__xor__", "__rxor__", "__ixor__", "__or__", "__ror__",
        "__ior__", "__invert__", "__complex__", "__trunc__", "__floor__", "__ceil__",
        "__get__", "__set__", "__delete__", "__set_name__", "__class_getitem__",
        "__instancecheck__", "__subclasscheck__", "__subclasshook__",
    }
)  # fmt: skip
# A class defining these sees every attribute that library code reads or writes on it by name: handed to the
# real functools.update_wrapper, ``getattr(wrapper, '__dict__').update(wrapped.__dict__)`` gives it type's dict.
ATTRIBUTE_HOOKS = frozenset({"__getattribute__", "__getattr__", "__setattr__", "__delattr__"})
# copy.copy (reached through collections.UserDict.copy) calls these, then sets attributes by the names they return.
COPY_HOOKS = frozenset(
    {"__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__",
     "__copy__", "__deepcopy__"}
)  # fmt: skip
SLOT_DUNDERS = frozenset({"__dict__", "__weakref__"})
# functools.wraps: allowed only as ``@functools.wraps(func)`` directly above a def (the wrapper is then a real
# function); anywhere else it hands update_wrapper an object whose attribute access the program controls.
WRAPS = "wraps"
# Methods that read attributes named by a template: only reachable as ``"literal".format`` (see _Checker).
FORMAT_METHODS = frozenset({"format", "format_map"})
# functools.cached_property reads and writes ``instance.__dict__[attrname]``; assigning it names any key.
CACHED_PROPERTY_NAME = "attrname"
# ``from m import *`` would bind the members refused above under their bare names.
STAR_IMPORT_REFUSED = frozenset({"functools", "operator", "string"})
BUILTIN_MATCH_CLASSES = frozenset(
    {"int", "float", "complex", "str", "bytes", "bytearray", "bool", "list", "tuple", "dict", "set", "frozenset"}
)
MAX_CODE_CHARS = 50_000
