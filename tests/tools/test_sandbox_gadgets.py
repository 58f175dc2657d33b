"""python_repl sandbox: gadgets, i.e. allowed library functions that read or write a program object's
attributes or ``__dict__`` on its behalf, by a name given as data.

The headline: ``functools.wraps(obj)(W())`` runs the real ``update_wrapper``, which does
``getattr(wrapper, '__dict__').update(obj.__dict__)``; when ``W`` defines ``__getattribute__`` the program gets
``object.__dict__`` and indexes it with plain strings (``'__getattribute__'`` is a getattr, ``'__subclasses__'``
a walk) up to ``os._wrap_close.__init__.__globals__``, the real ``os`` module. Before this file the policy
accepted that program (:data:`WRAPS_GADGET`) and the restricted interpreter ran it to the end.

The static tests call :func:`check_code` directly (fast, and independent of the runtime). The runtime tests
(``test_layer2_…``) run a gadget with the policy off: the restricted builtins close each gadget on their own too.
"""

from __future__ import annotations

import importlib

import pytest
from test_sandbox_escapes import CONTAINED
from test_sandbox_escapes import REFUSED as ESCAPES_REFUSED
from test_sandbox_programs import MODULE_PROGRAMS, PROGRAMS

from tools.sandbox import Limits, run_python
from tools.sandbox_policy import (
    ALLOWED_MODULES,
    ATTRIBUTE_HOOKS,
    BLOCKED_ATTRS,
    BLOCKED_CLASS_DUNDERS,
    CLASS_DUNDERS,
    COPY_HOOKS,
    STAR_IMPORT_REFUSED,
    WRAPS,
    check_code,
)

FAST = Limits(cpu_s=2, wall_s=6, memory_mb=256)

WRAPS_GADGET = """\
import functools
class Grab:
    def update(self, d):
        found.append(d)
class W:
    def __getattribute__(self, name):
        return Grab()
found = []
functools.wraps(object)(W())
ga = found[0]['__getattribute__']
wc = [c for c in ga(object, '__subclasses__')() if c.__name__ == '_wrap_close'][0]
print('REACHED', ga(wc.__init__, '__globals__')['__name__'])
"""

# The same feeder with a class built at run time, which no static check can see (``type(int)`` is ``type``).
WRAPS_GADGET_DYNAMIC = """\
import functools
found = []
Grab = type(int)('Grab', (), {'update': lambda self, d: found.append(d)})
W = type(int)('W', (), {'__getattr' + 'ibute__': lambda self, name: Grab()})
functools.wraps(object)(W())
print('REACHED', type(found[0]).__name__)
"""

# copy.copy, reached through collections.UserDict.copy, sets attributes by the names __reduce_ex__ returns.
USERDICT_COPY_GADGET = """\
import collections
class Target:
    pass
class U(collections.UserDict):
    __copy__ = None
    def __reduce_ex__(self, proto):
        return (lambda: Target, (), (None, {'__getattr' + '__': lambda self, name: 'REACHED ' + name}))
try:
    U().copy()
except AttributeError:
    pass
print(Target().anything)
"""

REFUSED: list[tuple[str, str, str]] = [
    # --- functools.wraps / update_wrapper -------------------------------------------------------
    ("wraps-gadget", WRAPS_GADGET, "'wraps' is only available as @functools.wraps(func)"),
    ("wraps-call-form", "import functools\ndef f():\n    pass\ng = functools.wraps(f)(lambda: 0)", "'wraps'"),
    ("wraps-alias", "import functools\nw = functools.wraps", "'wraps'"),
    ("wraps-from-call", "from functools import wraps\nwraps(len)(print)", "'wraps'"),
    ("wraps-import-as", "from functools import wraps as w\n@w(len)\ndef f():\n    pass", "under its own name"),
    ("wraps-partial", "import functools\nfunctools.partial(functools.wraps, len)", "'wraps'"),
    ("wraps-star", "from functools import *\nwraps(len)(print)", "'from functools import *'"),
    (
        "wraps-not-innermost",
        "import functools\ndef box(f):\n    return f\n@functools.wraps(len)\n@box\ndef g():\n    pass",
        "'wraps'",
    ),
    ("wraps-on-class", "import functools\n@functools.wraps(len)\nclass C:\n    pass", "'wraps'"),
    ("wraps-keywords", "import functools\n@functools.wraps(len, updated=())\ndef g():\n    pass", "'wraps'"),
    ("wraps-starred", "import functools\n@functools.wraps(*[len])\ndef g():\n    pass", "'wraps'"),
    ("wraps-match-kwd", "import functools\nmatch functools:\n    case object(wraps=w):\n        pass", "'wraps'"),
    ("update-wrapper-from", "from functools import update_wrapper", "update_wrapper"),
    # --- classes that see what library code reads or writes by name -----------------------------
    ("def-getattribute", "class W:\n    def __getattribute__(self, n):\n        return 1", "'__getattribute__'"),
    ("def-getattr", "class W:\n    def __getattr__(self, n):\n        return 1", "'__getattr__'"),
    ("def-setattr", "class W:\n    def __setattr__(self, n, v):\n        pass", "'__setattr__'"),
    ("def-delattr", "class W:\n    def __delattr__(self, n):\n        pass", "'__delattr__'"),
    ("assign-getattr", "class W:\n    __getattr__ = print", "'__getattr__'"),
    (
        "metaclass-getattribute",
        "class M(type):\n    def __getattribute__(cls, n):\n        return 1",
        "'__getattribute__'",
    ),
    ("property-dict", "class W:\n    @property\n    def __dict__(self):\n        return {}", "'__dict__'"),
    ("property-class", "class W:\n    @property\n    def __class__(self):\n        return int", "'__class__'"),
    ("def-match-args", "class W:\n    def __match_args__(self):\n        pass", "'__match_args__'"),
    ("slots-hook", "class S:\n    __slots__ = ('__getattr__',)", "__slots__ must be assigned a literal"),
    ("slots-computed", "names = ['x']\nclass S:\n    __slots__ = names", "__slots__ must be assigned a literal"),
    ("slots-unpacked", "class S:\n    __slots__, y = ('x',), 1", "__slots__ must be assigned a literal"),
    ("unknown-class-dunder", "class A:\n    __globals__ = 1", "may not define the special name '__globals__'"),
    ("type-three-arg", "T = type('T', (), {'__getattribute__': lambda s, n: 1})", "type() with three arguments"),
    ("type-starred", "args = ('T', (), {})\ntype(*args)", "type() with three arguments"),
    # --- copy / pickle hooks (copy.copy via collections.UserDict.copy) ---------------------------
    ("userdict-copy-reduce", USERDICT_COPY_GADGET, "'__reduce_ex__'"),
    ("copy-none", "class U:\n    __copy__ = None", "'__copy__'"),
    ("def-reduce", "class U:\n    def __reduce__(self):\n        return (print, ())", "'__reduce__'"),
    ("def-setstate", "class U:\n    def __setstate__(self, s):\n        pass", "'__setstate__'"),
    ("def-deepcopy", "class U:\n    def __deepcopy__(self, memo):\n        pass", "'__deepcopy__'"),
    # --- functools.cached_property reads instance.__dict__[attrname] ----------------------------
    (
        "cached-property-attrname",
        "import functools, re\nclass A:\n    @functools.cached_property\n    def p(self):\n        return 0\n"
        "cp = A.p\ncp.attrname = '__objclass__'\nre.RegexFlag.p = cp\nre.IGNORECASE.p",
        "assigning '.attrname'",
    ),
    # --- str.format on a template built at run time ----------------------------------------------
    (
        "match-format",
        "import random\nmatch str:\n    case object(format=f):\n        pass\n"
        "f('{0.__glo' + 'bals__[_os].environ}', random.seed)",
        "matching on the attribute 'format'",
    ),
    ("match-format-map", "match '':\n    case str(format_map=f):\n        pass", "'format_map'"),
    ("userstring-format", "import collections\ncollections.UserString('{0.real}').format(1)", "string literal"),
    # --- getattr in disguise under a bare name ---------------------------------------------------
    ("operator-star", "from operator import *\nattrgetter('real')(1)", "'from operator import *'"),
    ("string-star", "from string import *", "'from string import *'"),
    # --- binding a dunder name however it is spelled ----------------------------------------------
    (
        "except-as-builtins",
        "try:\n    1 / 0\nexcept Exception as __builtins__:\n    pass",
        "assigning the special name '__builtins__'",
    ),
    ("import-as-builtins", "import math as __builtins__", "'__builtins__'"),
    ("from-import-as-dunder", "from math import pi as __loader__", "'__loader__'"),
    ("def-builtins", "def __builtins__():\n    pass", "'__builtins__'"),
    ("class-builtins", "class __builtins__:\n    pass", "'__builtins__'"),
    ("match-as-builtins", "match 1:\n    case _ as __builtins__:\n        pass", "'__builtins__'"),
    ("match-rest-builtins", "match {}:\n    case {**__builtins__}:\n        pass", "'__builtins__'"),
    ("match-star-dunder", "match []:\n    case [*__spec__]:\n        pass", "'__spec__'"),
    ("module-getattr", "def __getattr__(name):\n    return 1", "'__getattr__'"),
]

ALLOWED: list[tuple[str, str]] = [
    (
        "wraps-decorator",
        "import functools\ndef log(fn):\n    @functools.wraps(fn)\n    def inner(*a, **k):\n"
        "        return fn(*a, **k)\n    return inner\n"
        "@log\ndef f(x):\n    'Doc.'\n    return x\nf(1), f.__name__, f.__doc__",
    ),
    (
        "wraps-from-import",
        "from functools import wraps\ndef log(fn):\n    @wraps(fn)\n    async def inner(*a):\n"
        "        return await fn(*a)\n    return inner",
    ),
    (
        "wraps-innermost-of-several",
        "import functools\ndef log(fn):\n    @staticmethod\n    @functools.wraps(fn)\n    def inner():\n        pass\n"
        "    return inner",
    ),
    ("own-function-named-wraps", "def wraps(x):\n    return lambda f: f\n@wraps(1)\ndef f():\n    pass"),
    (
        "functools-everyday",
        "from functools import lru_cache, cache, partial, reduce, cmp_to_key, total_ordering, cached_property\n"
        "@total_ordering\nclass V:\n    def __init__(self, v):\n        self.v = v\n    def __eq__(self, o):\n"
        "        return self.v == o.v\n    def __lt__(self, o):\n        return self.v < o.v\n"
        "class C:\n    @cached_property\n    def area(self):\n        return 2\n"
        "@cache\ndef sq(n):\n    return n * n\n"
        "sorted([3, 1], key=cmp_to_key(lambda a, b: a - b)), V(1) <= V(2), C().area, partial(pow, 2)(3)",
    ),
    (
        "cached-property-read-attrname",
        "import functools\nclass A:\n    p = functools.cached_property(len)\nA.p.attrname",
    ),
    ("operator-everyday", "from operator import itemgetter, add, mul\nimport operator\noperator.getitem([1], 0)"),
    ("math-star", "from math import *\nsqrt(pi)"),
    ("collections-star", "from collections import *\nCounter('ab')"),
    (
        "data-model-methods",
        "class Vec:\n    __slots__ = ('x', 'y')\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n"
        "    def __repr__(self):\n        return f'Vec({self.x}, {self.y})'\n    def __eq__(self, o):\n"
        "        return (self.x, self.y) == (o.x, o.y)\n    __hash__ = None\n    def __lt__(self, o):\n"
        "        return abs(self) < abs(o)\n    def __abs__(self):\n        return (self.x ** 2 + self.y ** 2) ** 0.5\n"
        "    def __add__(self, o):\n        return Vec(self.x + o.x, self.y + o.y)\n    __radd__ = __add__\n"
        "    def __matmul__(self, o):\n        return self.x * o.x + self.y * o.y\n    def __len__(self):\n"
        "        return 2\n    def __iter__(self):\n        yield self.x\n        yield self.y\n"
        "    def __getitem__(self, i):\n        return (self.x, self.y)[i]\n    def __contains__(self, v):\n"
        "        return v in (self.x, self.y)\n    def __bool__(self):\n        return bool(self.x or self.y)\n"
        "    def __format__(self, spec):\n        return format(self.x, spec)\n    def __del__(self):\n        pass\n"
        "Vec(1, 2) + Vec(3, 4)",
    ),
    (
        "descriptors-and-hooks",
        "class Positive:\n    def __set_name__(self, owner, name):\n        self.name = '_' + name\n"
        "    def __get__(self, obj, objtype=None):\n        return obj._v\n    def __set__(self, obj, value):\n"
        "        obj._v = value\nclass Base:\n    registry = []\n    def __init_subclass__(cls, **kw):\n"
        "        super().__init_subclass__(**kw)\n        Base.registry.append(cls.__name__)\n"
        "    def __class_getitem__(cls, item):\n        return cls\nclass Acct(Base):\n    balance = Positive()\n"
        "a = Acct()\na.balance = 3\na.balance, Base.registry, Acct[int]",
    ),
    (
        "context-manager-and-iterator",
        "class Timer:\n    def __enter__(self):\n        return self\n    def __exit__(self, *exc):\n"
        "        return False\n"
        "class Count:\n    def __init__(self):\n        self.n = 0\n    def __iter__(self):\n        return self\n"
        "    def __next__(self):\n        self.n += 1\n        if self.n > 3:\n            raise StopIteration\n"
        "        return self.n\nwith Timer():\n    list(Count())",
    ),
    (
        "singleton-metaclass",
        "class Singleton(type):\n    _instances = {}\n    def __call__(cls, *a, **k):\n"
        "        if cls not in cls._instances:\n            cls._instances[cls] = super().__call__(*a, **k)\n"
        "        return cls._instances[cls]\nclass Config(metaclass=Singleton):\n    pass\nConfig() is Config()",
    ),
    ("type-one-arg", "x = 3\ntype(x).__name__, type(x) is int, isinstance(int, type), [type(v) for v in (1, 'a')]"),
    ("format-literals", "'{:>8.2f}|{0!r}|{name}'.format(3.14159, name='n'), '{a}'.format_map({'a': 1})"),
    ("userstring-literal-format", "import collections\ncollections.UserString('x').upper()"),
    ("except-as", "try:\n    1 / 0\nexcept ZeroDivisionError as err:\n    msg = str(err)"),
    ("import-as", "import math as m, collections.abc as cabc\nfrom statistics import mean as avg"),
    (
        "match-captures",
        "match {'a': [1, 2]}:\n    case {'a': [first, *rest], **others}:\n        print(first, rest, others)",
    ),
    (
        "match-keyword-attrs",
        "class P:\n    def __init__(self):\n        self.x = 0\nmatch P():\n    case P(x=0):\n        pass",
    ),
    (
        "userdict-subclass",
        "import collections\nclass D(collections.UserDict):\n    def __missing__(self, k):\n        return 0",
    ),
    ("name-dunder-main", "if __name__ == '__main__':\n    print('main')"),
]


def _refusal(code: str) -> str:
    report = check_code(code)
    assert not report.ok, f"accepted: {code!r}"
    return report.message()


def test_the_wraps_gadget_is_refused_with_a_readable_reason() -> None:
    """The 12-line wraps gadget: accepted by the policy before this change (it printed ``REACHED os``)."""
    assert len(WRAPS_GADGET.splitlines()) == 12
    message = _refusal(WRAPS_GADGET)
    assert message.startswith("Refused before running (nothing was executed): line 6: a class may not define")
    assert "line 9: 'wraps' is only available as @functools.wraps(func) directly above a def" in message


@pytest.mark.parametrize("code, reason", [(c, r) for _, c, r in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_gadget_refused_by_the_policy(code: str, reason: str) -> None:
    message = _refusal(code)
    assert message.startswith("Refused before running (nothing was executed): line ")
    assert reason in message


@pytest.mark.parametrize("code", [c for _, c in ALLOWED], ids=[i for i, _ in ALLOWED])
def test_legitimate_program_still_accepted(code: str) -> None:
    report = check_code(code)
    assert report.ok, report.violations


@pytest.mark.parametrize(
    "code",
    [p[1] for p in PROGRAMS] + [c for c, _ in MODULE_PROGRAMS.values()],
    ids=[p[0] for p in PROGRAMS] + [f"module-{m}" for m in MODULE_PROGRAMS],
)
def test_the_programs_corpus_still_passes_the_policy(code: str) -> None:
    import textwrap

    report = check_code(textwrap.dedent(code).strip("\n"))
    assert report.ok, report.violations


@pytest.mark.parametrize("code", [c for _, c, _ in CONTAINED], ids=[i for i, _, _ in CONTAINED])
def test_the_contained_corpus_still_passes_the_policy(code: str) -> None:
    """The escape corpus's runtime half must still reach the runtime (it tests layer 2, not the policy)."""
    assert check_code(code).ok, check_code(code).violations


@pytest.mark.parametrize(
    "code, reason", [(c, r) for _, c, r in ESCAPES_REFUSED], ids=[i for i, _, _ in ESCAPES_REFUSED]
)
def test_the_refused_escape_corpus_is_still_refused_statically(code: str, reason: str) -> None:
    assert reason in _refusal(code)


def test_star_imports_are_refused_for_every_module_with_a_refused_member() -> None:
    for name in sorted(ALLOWED_MODULES):
        public = {m for m in dir(importlib.import_module(name)) if not m.startswith("_")}
        if public & (BLOCKED_ATTRS | {WRAPS}):
            assert name in STAR_IMPORT_REFUSED, name
            assert f"'from {name} import *'" in _refusal(f"from {name} import *")


def test_the_class_allow_list_holds_no_hook() -> None:
    assert not CLASS_DUNDERS & (ATTRIBUTE_HOOKS | COPY_HOOKS | BLOCKED_CLASS_DUNDERS)


# --- runtime: what layer 2 (the restricted builtins and importer) still lets through with the policy off -------


def test_wraps_as_a_decorator_still_runs() -> None:
    code = (
        "from functools import wraps\ndef shout(fn):\n    @wraps(fn)\n    def inner(*a):\n"
        "        return fn(*a).upper()\n    return inner\n@shout\ndef hi(name):\n    'Greets.'\n"
        "    return 'hi ' + name\nprint(hi('ada'), hi.__name__, hi.__doc__)"
    )
    result = run_python(code, FAST)
    assert (result.status, result.output) == ("ok", "HI ADA hi Greets.\n"), result.error


@pytest.mark.parametrize(
    "code, expect",
    [
        ("import functools\nfunctools.wraps(len).func", "has no attribute 'func'"),
        ("import functools\nfunctools.wraps(len, ('__globals__',))", "TypeError"),
    ],
    ids=["no-partial-func", "no-assigned"],
)
def test_layer2_wraps_is_a_closure_without_assigned_or_func(code: str, expect: str) -> None:
    """Moved from the escape corpus's runtime half: the policy now refuses these before they run."""
    result = run_python(code, FAST, check_policy=False, restrict=True)
    assert expect in f"{result.output}\n{result.error}"


@pytest.mark.parametrize("code", [WRAPS_GADGET, WRAPS_GADGET_DYNAMIC], ids=["static-class", "type-of-int-class"])
def test_layer2_alone_keeps_wraps_from_feeding_a_program_object(code: str) -> None:
    result = run_python(code, FAST, check_policy=False, restrict=True)
    assert "REACHED" not in result.output, result.output


def test_layer2_alone_keeps_userdict_copy_from_setting_attributes_by_name() -> None:
    result = run_python(USERDICT_COPY_GADGET, FAST, check_policy=False, restrict=True)
    assert "REACHED" not in result.output, result.output


DELETE_BUILTINS = "try:\n    1 / 0\nexcept Exception as __builtins__:\n    pass\n"


def test_layer2_alone_keeps_the_echoed_expression_on_the_restricted_builtins() -> None:
    result = run_python(DELETE_BUILTINS + "open", FAST, check_policy=False, restrict=True)
    assert "built-in function open" not in result.output, result.output


def test_layer2_alone_keeps_the_next_session_step_on_the_restricted_builtins() -> None:
    from session_kit import FAST as SESSION_FAST
    from session_kit import REGISTRY, drive

    from tools.sandbox_session import SandboxSession

    with SandboxSession(REGISTRY, SESSION_FAST, check_policy=False, restrict=True) as session:
        assert drive(session, DELETE_BUILTINS)[1].ok
        _, result = drive(session, "import random\nprint(random._os.name)")
    assert result.status == "error" and "_os" in result.error, result.output
