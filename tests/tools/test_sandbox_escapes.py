"""python_repl sandbox: a corpus of escape attempts, each refused by the policy or contained by the process.

The test process holds secret canaries in its environment (``canary_env``); no attempt may ever
show them. ``REFUSED`` must be stopped by the static policy before anything runs; ``CONTAINED``
passes the policy (or is meant to reach the runtime layer) and must still fail or be harmless.
"""

from __future__ import annotations

import pytest

from tools import default_registry
from tools.sandbox import Limits, run_python

FAST = Limits(cpu_s=2, wall_s=4, memory_mb=256)

REFUSED: list[tuple[str, str, str]] = [
    # --- imports --------------------------------------------------------------------------------
    ("import-os", "import os\nos.system('id')", "import of 'os'"),
    ("import-sys", "import sys\nprint(sys.modules)", "import of 'sys'"),
    ("import-subprocess", "import subprocess\nsubprocess.run(['id'])", "import of 'subprocess'"),
    ("import-builtins", "import builtins\nbuiltins.open('/etc/passwd')", "import of 'builtins'"),
    ("import-ctypes", "import ctypes\nctypes.CDLL(None).system(b'id')", "import of 'ctypes'"),
    ("import-importlib", "import importlib\nimportlib.import_module('os')", "import of 'importlib'"),
    ("from-importlib", "from importlib import import_module\nimport_module('os')", "import of 'importlib'"),
    ("from-os", "from os import system\nsystem('id')", "import of 'os'"),
    ("import-os-path", "import os.path", "import of 'os.path'"),
    ("import-posix", "import posix\nposix.system('id')", "import of 'posix'"),
    ("import-socket", "import socket\nsocket.create_connection(('example.com', 80))", "import of 'socket'"),
    ("import-_socket", "import _socket", "import of '_socket'"),
    ("import-shutil", "import shutil\nshutil.rmtree('/')", "import of 'shutil'"),
    ("import-pathlib", "import pathlib\npathlib.Path('/etc/passwd').read_text()", "import of 'pathlib'"),
    ("import-io", "import io\nio.open('/etc/passwd').read()", "import of 'io'"),
    ("import-thread", "import _thread", "import of '_thread'"),
    ("import-strptime-internal", "import _strptime", "import of '_strptime'"),
    ("import-in-function", "def f():\n    import os\n    return os\nf()", "import of 'os'"),
    ("import-in-class", "class A:\n    import sys", "import of 'sys'"),
    ("import-mixed", "import math, os", "import of 'os'"),
    ("relative-import", "from . import secrets", "relative imports"),
    ("future-import", "from __future__ import annotations", "import of '__future__'"),
    ("private-from-allowed", "from random import _os\n_os.system('id')", "private name '_os'"),
    ("dunder-import", "__import__('os').system('id')", "'__import__'"),
    ("dunder-builtins", "__builtins__['open']('/etc/passwd')", "'__builtins__'"),
    ("dunder-builtins-dict", "__builtins__.__dict__['eval']('1')", "'__builtins__'"),
    ("dunder-loader", "__loader__.load_module('posix')", "'__loader__'"),
    ("dunder-spec", "__spec__", "'__spec__'"),
    # --- getattr in disguise ----------------------------------------------------------------------
    ("attrgetter", "import operator\noperator.attrgetter('__class__')(1)", "attrgetter"),
    ("attrgetter-from", "from operator import attrgetter", "attrgetter"),
    ("methodcaller", "import operator\noperator.methodcaller('__reduce_ex__', 2)(1)", "methodcaller"),
    ("formatter", "import string\nstring.Formatter().get_field('0.__class__', [1], {})", "Formatter"),
    ("formatter-from", "from string import Formatter", "Formatter"),
    ("update-wrapper", "import functools\nfunctools.update_wrapper(print, len, ('__globals__',))", "update_wrapper"),
    ("singledispatch", "from functools import singledispatch", "singledispatch"),
    # gadgets: library code that reads or writes a program object's attributes by a name given as data
    ("wraps-func", "import functools\nfunctools.wraps(len).func", "'wraps'"),
    ("wraps-assigned", "import functools\nfunctools.wraps(len, ('__globals__',))", "'wraps'"),
    (
        "wraps-getattribute-feeder",
        "import functools\nclass W:\n    def __getattribute__(self, n):\n        return self\n"
        "functools.wraps(object)(W())",
        "'__getattribute__'",
    ),
    (
        "match-format-runtime-template",
        "import random\nmatch str:\n    case object(format=f):\n        pass\n"
        "f('{0.__glo' + 'bals__[_os].environ}', random.seed)",
        "'format'",
    ),
    (
        "userdict-copy-reduce",
        "import collections\nclass U(collections.UserDict):\n    __copy__ = None\n"
        "    def __reduce_ex__(self, p):\n        return (dict, ())\nU().copy()",
        "'__copy__'",
    ),
    ("cached-property-attrname", "import functools\nfunctools.cached_property(len).attrname = 'x'", "'.attrname'"),
    ("except-as-builtins", "try:\n    1/0\nexcept Exception as __builtins__:\n    pass", "'__builtins__'"),
    # --- __subclasses__ walks ---------------------------------------------------------------------
    ("subclasses-walk", "().__class__.__base__.__subclasses__()", "'__class__'"),
    (
        "wrap-close-system",
        "[c for c in ().__class__.__bases__[0].__subclasses__() if c.__name__ == '_wrap_close'][0]"
        ".__init__.__globals__['system']('id')",
        "'__class__'",
    ),
    ("object-subclasses", "object.__subclasses__()", "'__subclasses__'"),
    ("type-subclasses", "type.__subclasses__(object)", "'__subclasses__'"),
    ("mro-walk", "int.__mro__[-1].__subclasses__()", "'__mro__'"),
    ("bases-walk", "bool.__bases__[0].__bases__[0].__subclasses__()", "'__bases__'"),
    # --- frame and generator walks ----------------------------------------------------------------
    ("gi-frame", "def g():\n    yield 1\nx = g()\nx.gi_frame.f_back.f_globals", "gi_frame"),
    ("genexpr-frame", "gen = (i for i in [1])\ngen.gi_frame.f_globals['__builtins__']", "gi_frame"),
    ("coroutine-frame", "async def c():\n    pass\nco = c()\nco.cr_frame.f_back", "cr_frame"),
    ("f-back", "def f(fr):\n    return fr.f_back.f_globals", "f_back"),
    (
        "traceback-frame",
        "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back.f_globals",
        "__traceback__",
    ),
    ("tb-next", "def f(tb):\n    return tb.tb_next.tb_frame", "tb_next"),
    ("code-object", "f = lambda: 0\nf.__code__.co_consts", "__code__"),
    ("co-attrs", "def f(c):\n    return c.co_code", "co_code"),
    # --- __globals__ and friends ------------------------------------------------------------------
    ("globals-read", "def f():\n    pass\nf.__globals__['__builtins__']['open']", "__globals__"),
    ("globals-write", "def f():\n    pass\nf.__globals__['__builtins__'] = {}", "__globals__"),
    ("globals-update", "(lambda: 0).__globals__.update(x=1)", "__globals__"),
    ("closure", "def f():\n    x = 1\n    return lambda: x\nf().__closure__[0].cell_contents", "__closure__"),
    ("builtin-self", "print.__self__.open('/etc/passwd')", "__self__"),
    ("reduce-ex", "(1).__reduce_ex__(2)", "__reduce_ex__"),
    ("module-dict", "import random\nrandom.__dict__", "__dict__"),
    ("module-loader", "import math\nmath.__loader__", "__loader__"),
    ("defaults", "def f(x=1):\n    pass\nf.__defaults__", "__defaults__"),
    ("getattribute", "object.__getattribute__(1, '__class__')", "__getattribute__"),
    ("super-getattribute", "super(type, type).__getattribute__", "__getattribute__"),
    ("type-dict", "type.__dict__['__subclasses__']", "__dict__"),
    # --- str.format leaks -------------------------------------------------------------------------
    ("format-class", "'{0.__class__}'.format(1)", "reads an attribute"),
    ("format-subclasses", "'{0.__class__.__base__.__subclasses__}'.format(0)", "reads an attribute"),
    ("format-kw-globals", "def f():\n    pass\n'{x.__globals__}'.format(x=f)", "reads an attribute"),
    ("format-variable", "fmt = '{0.__cl' + 'ass__}'\nfmt.format(1)", "string literal"),
    ("format-unbound", "str.format('{0.__class__}', 1)", "string literal"),
    ("format-map", "'{x.__class__}'.format_map({'x': 1})", "reads an attribute"),
    ("format-gi-frame", "g = (i for i in [1])\n'{0.gi_frame}'.format(g)", "reads an attribute"),
    ("format-nested-spec", "'{0:{1.__class__}}'.format(1, 2)", "reads an attribute"),
    ("format-bound-method", "f = '{0.real}'.format\nf(1)", "reads an attribute"),
    # --- builtins that are refused ----------------------------------------------------------------
    ("getattr-concat", "getattr(1, '__cl' + 'ass__')", "'getattr'"),
    ("getattr-alias", "g = getattr\ng(1, 'real')", "'getattr'"),
    ("setattr", "class A:\n    pass\nsetattr(A, 'x', 1)", "'setattr'"),
    ("delattr", "delattr(1, 'x')", "'delattr'"),
    ("vars", "vars()", "'vars'"),
    ("globals", "globals()['__builtins__']", "'globals'"),
    ("locals", "locals()", "'locals'"),
    ("eval", "eval('1+1')", "'eval'"),
    ("exec", "exec('import os')", "'exec'"),
    ("compile", "compile('1', 'x', 'eval')", "'compile'"),
    ("open-passwd", "open('/etc/passwd').read()", "'open'"),
    ("open-environ", "open('/proc/self/environ').read()", "'open'"),
    ("open-parent-environ", "open('/proc/1/environ').read()", "'open'"),
    ("write-file", "open('pwned.txt', 'w').write('hi')", "'open'"),
    ("breakpoint", "breakpoint()", "'breakpoint'"),
    ("input", "input()", "'input'"),
    ("help", "help()", "'help'"),
    ("fullwidth-eval", "ｅｖａｌ('1')", "'eval'"),
    ("json-hook-eval", "import json\njson.loads('{}', object_hook=eval)", "'eval'"),
    ("sorted-key-exec", "sorted(['1'], key=exec)", "'exec'"),
    ("map-getattr", "list(map(getattr, [1], ['__class__']))", "'getattr'"),
    # --- decorators and default arguments smuggling calls ---------------------------------------
    ("decorator-eval", "@eval\ndef f():\n    pass", "'eval'"),
    ("decorator-lambda-globals", "@(lambda f: f.__globals__)\ndef g():\n    pass", "__globals__"),
    ("default-import", "def f(x=__import__('os')):\n    return x", "'__import__'"),
    ("default-getattr", "def f(a=getattr):\n    return a(1, '__class__')", "'getattr'"),
    ("lambda-default-open", "(lambda x=open: x('/etc/passwd'))()", "'open'"),
    ("class-body-import", "class A:\n    x = __import__('os')", "'__import__'"),
    ("dunder-param", "def f(__builtins__):\n    pass", "'__builtins__'"),
    ("global-builtins", "def f():\n    global __builtins__", "'__builtins__'"),
    # --- exceptions, type() and metaclass tricks --------------------------------------------------
    ("exc-traceback", "try:\n    1/0\nexcept Exception as e:\n    tb = e.__traceback__", "__traceback__"),
    ("exc-context", "try:\n    1/0\nexcept Exception as e:\n    e.__context__", "__context__"),
    ("type-subclasses-attr", "type(1).__subclasses__()", "__subclasses__"),
    (
        "metaclass-class-attr",
        "class M(type):\n    def __new__(m, n, b, d):\n        return type.__new__(m, n, b, d)\n"
        "class A(metaclass=M):\n    pass\nA.__class__",
        "__class__",
    ),
    ("type-dict-attr", "T = type('T', (), {})\nT().__dict__", "__dict__"),
    ("type-three-arg", "T = type('T', (), {'__getattribute__': lambda s, n: 1})\nT().x", "type() with three"),
    ("class-assign-class", "class A:\n    __class__ = int", "'__class__'"),
    ("match-args", "class A:\n    __match_args__ = ('gi_frame',)", "'__match_args__'"),
    ("match-kwd-frame", "g = (i for i in [1])\nmatch g:\n    case object(gi_frame=f):\n        pass", "gi_frame"),
    (
        "match-positional-instancecheck",
        "class M(type):\n    def __instancecheck__(c, x):\n        return True\nclass T(metaclass=M):\n    pass\n"
        "match 1:\n    case T(x):\n        pass",
        "positional class patterns",
    ),
    ("match-dunder-kwd", "match 1:\n    case int(__class__=c):\n        pass", "__class__"),
    (
        "del-time-bomb-import",
        "class B:\n    def __del__(self):\n        import os\n        os.system('id')\nb = B()",
        "'os'",
    ),
    ("module-assign-dunder", "__name__ = 'x'\n__builtins__ = {}", "'__builtins__'"),
]

CONTAINED: list[tuple[str, str, str]] = [
    # (id, code, text the output/error must contain)
    ("private-module-attr", "import random\nrandom._os.system('id')", "has no attribute '_os'"),
    ("private-collections-sys", "import collections\ncollections._sys.modules['os']", "has no attribute '_sys'"),
    ("submodule-hidden", "import json\njson.decoder", "has no attribute 'decoder'"),
    ("del-time-bomb-print", "class B:\n    def __del__(self):\n        print('boom')\nb = B()\nprint('done')", "done"),
    (
        "del-time-bomb-loop",
        "class B:\n    def __del__(self):\n        while True:\n            pass\nb = B()\nprint('ok')",
        "ok",
    ),
    (
        "namedtuple-frame-field",
        "import collections\nP = collections.namedtuple('P', ['gi_frame'])\nP(1)",
        "P(gi_frame=1)",
    ),
    ("hasattr-only-bool", "hasattr(1, '__class__')", "True"),
    # a class built at run time escapes every static check (type(int) is type); the feeders are what is closed
    ("type-of-int-three-arg", "T = type(int)('T', (), {'__getattribute__': lambda s, n: 1})\nT().x", "1"),
    ("dir-builtins-names", "'open' in dir(print)", "False"),
    ("exception-args", "try:\n    1/0\nexcept Exception as e:\n    print(e.args)", "('division by zero',)"),
    ("print-to-object", "class W:\n    def write(self, s):\n        pass\nprint('x', file=W())\nprint('y')", "y"),
]


def _everything(result: object) -> str:
    return f"{getattr(result, 'output', '')}\n{getattr(result, 'error', '')}"


@pytest.mark.parametrize("code, reason", [(c, r) for _, c, r in REFUSED], ids=[i for i, _, _ in REFUSED])
def test_refused_before_running(canary_env: tuple[str, ...], code: str, reason: str) -> None:
    result = run_python(code, FAST)
    assert result.status == "refused", _everything(result)
    assert result.error.startswith("Refused before running (nothing was executed)")
    assert reason in result.error
    for canary in canary_env:
        assert canary not in _everything(result)


@pytest.mark.parametrize("code, expect", [(c, e) for _, c, e in CONTAINED], ids=[i for i, _, _ in CONTAINED])
def test_contained_at_runtime(canary_env: tuple[str, ...], code: str, expect: str) -> None:
    result = run_python(code, FAST)
    assert result.status != "refused", result.error
    assert expect in _everything(result)
    for canary in canary_env:
        assert canary not in _everything(result)


def test_corpus_size() -> None:
    assert len(REFUSED) + len(CONTAINED) >= 60


def test_refusal_through_the_tool_runs_nothing_and_names_the_reason(canary_env: tuple[str, ...]) -> None:
    r = default_registry().call("python_repl", "import os\nprint(os.environ)")
    assert r.is_error
    assert "Refused before running" in r.output and "import of 'os' is not allowed" in r.output
    assert "line 1" in r.output


def test_several_violations_are_listed() -> None:
    result = run_python("import os\nimport sys\neval('1')", FAST)
    assert "line 1" in result.error and "line 2" in result.error and "line 3" in result.error
