"""python_repl sandbox: legitimate programs still run, with REPL-style echo and trimmed tracebacks."""

from __future__ import annotations

import textwrap

import pytest

from tools import default_registry
from tools.python_repl import python_repl, strip_fences
from tools.sandbox import Limits, run_python
from tools.sandbox_policy import ALLOWED_MODULES, check_code

LIMITS = Limits(cpu_s=3, wall_s=5)


def run_ok(code: str) -> str:
    result = run_python(textwrap.dedent(code).strip("\n"), LIMITS)
    assert result.status == "ok", f"{result.status}: {result.error}"
    return result.output


PROGRAMS = [
    (
        "class-init-repr",
        """
        class Point:
            def __init__(self, x, y):
                self.x, self.y = x, y
            def __repr__(self):
                return f"Point({self.x}, {self.y})"
            def __add__(self, other):
                return Point(self.x + other.x, self.y + other.y)
            def __eq__(self, other):
                return (self.x, self.y) == (other.x, other.y)
        p = Point(1, 2) + Point(3, 4)
        print(p, p == Point(4, 6), type(p).__name__)
        """,
        "Point(4, 6) True Point\n",
    ),
    (
        "inheritance-super",
        """
        class Animal:
            def __init__(self, name):
                self.name = name
            def speak(self):
                return "..."
        class Dog(Animal):
            def __init__(self, name, breed):
                super().__init__(name)
                self.breed = breed
            def speak(self):
                return f"{self.name} the {self.breed} says woof"
        Dog("Rex", "beagle").speak()
        """,
        "'Rex the beagle says woof'\n",
    ),
    (
        "closures-nonlocal",
        """
        def counter():
            n = 0
            def inc():
                nonlocal n
                n += 1
                return n
            return inc
        c = counter()
        [c(), c(), c()]
        """,
        "[1, 2, 3]\n",
    ),
    (
        "generators",
        """
        def fib():
            a, b = 0, 1
            while True:
                yield a
                a, b = b, a + b
        g = fib()
        print([next(g) for _ in range(10)])
        print(sum(x * x for x in range(10) if x % 2))
        """,
        "[0, 1, 1, 2, 3, 5, 8, 13, 21, 34]\n165\n",
    ),
    (
        "recursion",
        """
        def hanoi(n, a="A", b="B", c="C"):
            return 0 if n == 0 else hanoi(n - 1, a, c, b) + 1 + hanoi(n - 1, c, b, a)
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        print(hanoi(10), fact(30))
        """,
        "1023 265252859812191058636308480000000\n",
    ),
    (
        "exceptions",
        """
        class InsufficientFunds(Exception):
            pass
        def withdraw(balance, amount):
            if amount > balance:
                raise InsufficientFunds(f"need {amount - balance} more")
            return balance - amount
        try:
            withdraw(10, 25)
        except InsufficientFunds as e:
            print("caught:", e)
        finally:
            print("done")
        """,
        "caught: need 15 more\ndone\n",
    ),
    (
        "f-strings-and-format",
        """
        pi = 3.14159265
        name = "world"
        print(f"{name!r:>10} {pi:.2f} {1234567:,} {0.25:.0%} {255:#x}")
        print("{:.3f} and {}".format(pi, "{name}".format(name=name)))
        print("%s has %d items" % ("cart", 3))
        """,
        "   'world' 3.14 1,234,567 25% 0xff\n3.142 and world\ncart has 3 items\n",
    ),
    (
        "comprehensions-walrus-match",
        """
        data = [3, 1, 4, 1, 5, 9, 2, 6]
        squares = {x: x * x for x in data if (y := x % 2)}
        def kind(v):
            match v:
                case int() if v < 0:
                    return "negative"
                case 0:
                    return "zero"
                case [first, *rest]:
                    return f"list starting {first}"
                case {"k": value}:
                    return f"dict with {value}"
                case _:
                    return "other"
        print(squares, sorted(set(data)), [kind(v) for v in (-1, 0, [7, 8], {"k": 2}, "s")])
        """,
        "{3: 9, 1: 1, 5: 25, 9: 81} [1, 2, 3, 4, 5, 6, 9] "
        "['negative', 'zero', 'list starting 7', 'dict with 2', 'other']\n",
    ),
    (
        "main-guard-and-globals",
        """
        total = 0
        def add(n):
            global total
            total += n
        if __name__ == "__main__":
            for i in range(5):
                add(i)
        print(total)
        """,
        "10\n",
    ),
    (
        "decorator-with-wraps",
        """
        import functools
        def shout(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs).upper()
            return wrapper
        @shout
        def greet(name):
            "Say hello."
            return f"hello {name}"
        print(greet("ada"), greet.__name__, greet.__doc__)
        """,
        "HELLO ADA greet Say hello.\n",
    ),
    (
        "unicode-and-strings",
        """
        s = "Ünïcödé — naïve café 🚀"
        print(s.upper(), len(s), s[::-1][:3], " ".join(w.capitalize() for w in "the quick fox".split()))
        """,
        "ÜNÏCÖDÉ — NAÏVE CAFÉ 🚀 22 🚀 é The Quick Fox\n",
    ),
    (
        "hasattr-isinstance-sorting",
        """
        people = [("ann", 31), ("bob", 25), ("cy", 31)]
        by_age = sorted(people, key=lambda p: (-p[1], p[0]))
        print(by_age, isinstance(by_age, list), hasattr(by_age, "append"))
        """,
        "[('ann', 31), ('cy', 31), ('bob', 25)] True True\n",
    ),
    (
        "last-expression-echo",
        """
        x = 6
        y = 7
        x * y
        """,
        "42\n",
    ),
    ("none-is-not-echoed", "x = [1, 2]\nx.append(3)", ""),
    ("big-int", "2 ** 200", f"{2**200}\n"),
]


@pytest.mark.parametrize("code, expected", [p[1:] for p in PROGRAMS], ids=[p[0] for p in PROGRAMS])
def test_legitimate_programs(code: str, expected: str) -> None:
    assert run_ok(code) == expected


MODULE_PROGRAMS = {
    "math": (
        "import math\n"
        "print(math.sqrt(2), math.gcd(12, 18), math.comb(5, 2), math.pi)",
        "1.4142135623730951 6 10 3.141592653589793\n",
    ),
    "statistics": (
        "import statistics as st\n"
        "print(st.mean([1, 2, 3, 4]), st.median([3, 1, 2]), round(st.stdev([1, 2, 3, 4]), 3))",
        "2.5 2 1.291\n",
    ),
    "itertools": (
        "from itertools import permutations, accumulate, groupby\n"
        "print(len(list(permutations(range(4)))), list(accumulate([1, 2, 3])), [k for k, _ in groupby('aabbc')])",
        "24 [1, 3, 6] ['a', 'b', 'c']\n",
    ),
    "functools": (
        "from functools import lru_cache, reduce, partial\n"
        "@lru_cache(maxsize=None)\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "print(fib(90), reduce(lambda a, b: a * b, range(1, 6)), partial(pow, 2)(10))",
        "2880067194370816120 120 1024\n",
    ),
    "collections": (
        "from collections import Counter, defaultdict, deque, namedtuple, OrderedDict\n"
        "import collections.abc\n"
        "P = namedtuple('P', 'x y')\n"
        "d = defaultdict(list)\n"
        "d['a'].append(1)\n"
        "q = deque([1, 2, 3], maxlen=2)\n"
        "print(Counter('banana').most_common(1), dict(d), list(q), P(1, 2), isinstance({}, "
        "collections.abc.Mapping), list(OrderedDict(b=1, a=2)))",
        "[('a', 3)] {'a': [1]} [2, 3] P(x=1, y=2) True ['b', 'a']\n",
    ),
    "datetime": (
        "import datetime as dt\n"
        "d = dt.datetime.strptime('2024-02-28', '%Y-%m-%d') + dt.timedelta(days=2)\n"
        "print(d.date(), d.strftime('%A'), (dt.date(2025, 1, 1) - dt.date(2024, 1, 1)).days)",
        "2024-03-01 Friday 366\n",
    ),
    "time": (
        "import time\n"
        "t0 = time.perf_counter()\n"
        "time.sleep(0.01)\n"
        "print(time.perf_counter() - t0 >= 0.01, time.strftime('%Y', time.gmtime(0)), type(time.time()).__name__)",
        "True 1970 float\n",
    ),
    "re": (
        "import re\n"
        "print(re.findall(r'\\d+', 'a1b22c333'), re.sub(r'(\\w+)@(\\w+)', r'\\2 at \\1', 'me@home'), "
        "bool(re.fullmatch(r'[a-z]+', 'abc')))",
        "['1', '22', '333'] home at me True\n",
    ),
    "json": (
        "import json\n"
        "s = json.dumps({'b': [1, 2.5, None], 'a': True}, sort_keys=True)\n"
        "print(s, json.loads(s)['b'])",
        '{"a": true, "b": [1, 2.5, null]} [1, 2.5, None]\n',
    ),
    "random": (
        "import random\n"
        "random.seed(42)\n"
        "print(random.randint(1, 100), random.choice('abc'), len(random.sample(range(100), 5)))",
        "82 a 5\n",
    ),
    "fractions": (
        "from fractions import Fraction\n"
        "print(Fraction(1, 3) + Fraction(1, 6), Fraction('0.125'))",
        "1/2 1/8\n",
    ),
    "decimal": (
        "from decimal import Decimal, getcontext\n"
        "getcontext().prec = 30\n"
        "print(Decimal(1) / Decimal(7), Decimal('0.1') + Decimal('0.2'))",
        "0.142857142857142857142857142857 0.3\n",
    ),
    "string": (
        "import string\n"
        "print(string.ascii_lowercase[:5], string.capwords('hello world'), string.Template('$who likes "
        "$what').substitute(who='tim', what='pie'))",
        "abcde Hello World tim likes pie\n",
    ),
    "heapq": (
        "import heapq\n"
        "h = [5, 1, 8, 3]\n"
        "heapq.heapify(h)\n"
        "print(heapq.heappop(h), heapq.nsmallest(2, [9, 4, 7]), heapq.nlargest(1, [9, 4, 7]))",
        "1 [4, 7] [9]\n",
    ),
    "bisect": (
        "import bisect\n"
        "a = [1, 3, 5, 7]\n"
        "bisect.insort(a, 4)\n"
        "print(a, bisect.bisect_left(a, 5))",
        "[1, 3, 4, 5, 7] 3\n",
    ),
    "operator": (
        "import operator\n"
        "from operator import itemgetter\n"
        "rows = [('b', 2), ('a', 1)]\n"
        "print(sorted(rows, key=itemgetter(1)), operator.add(2, 3), operator.mul(4, 5))",
        "[('a', 1), ('b', 2)] 5 20\n",
    ),
}


def test_every_allowed_module_has_a_program() -> None:
    assert set(MODULE_PROGRAMS) == set(ALLOWED_MODULES)


@pytest.mark.parametrize("module", sorted(MODULE_PROGRAMS))
def test_every_allowed_module_works(module: str) -> None:
    code, expected = MODULE_PROGRAMS[module]
    assert run_ok(code) == expected


def test_all_allowed_modules_in_one_program() -> None:
    code = "import " + ", ".join(sorted(ALLOWED_MODULES)) + "\nprint('ok')"
    assert run_ok(code) == "ok\n"


def test_large_print_is_truncated_with_a_marker() -> None:
    out = run_ok("for i in range(100000):\n    print(i)")
    assert out.startswith("0\n1\n2\n")
    assert "…[output truncated: " in out and out.rstrip().endswith("more characters]")
    assert len(out) < LIMITS.output_chars + 100


def test_traceback_is_trimmed_to_the_users_code() -> None:
    result = run_python("def divide(a, b):\n    return a / b\n\nprint('start')\ndivide(1, 0)", LIMITS)
    assert result.status == "error"
    assert result.output == "start\n"
    assert result.error == (
        "Traceback (most recent call last):\n"
        '  File "<repl>", line 5, in <module>\n'
        "    divide(1, 0)\n"
        '  File "<repl>", line 2, in divide\n'
        "    return a / b\n"
        "ZeroDivisionError: division by zero"
    )
    assert "_sandbox_child" not in result.error and "site-packages" not in result.error


def test_errors_inside_stdlib_show_only_user_frames() -> None:
    result = run_python("import json\njson.loads('{bad json')", LIMITS)
    assert result.error.startswith('Traceback (most recent call last):\n  File "<repl>", line 2, in <module>')
    assert result.error.endswith(
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert "/lib/python" not in result.error


def test_syntax_errors_are_reported_without_running() -> None:
    r = default_registry().call("python_repl", "print('a'\nx = 1")
    assert r.is_error and r.output.startswith("SyntaxError:") and "line 1" in r.output


def test_markdown_fences_are_stripped() -> None:
    assert strip_fences("```python\nprint(1)\n```") == "print(1)"
    assert strip_fences("```\nprint(2)\n```\n") == "print(2)"
    assert strip_fences("print(3)") == "print(3)"
    assert python_repl("```py\nprint('fenced')\n```") == "fenced"


def test_tool_output_for_silent_programs_and_empty_code() -> None:
    assert "printed nothing" in python_repl("x = 1")
    r = default_registry().call("python_repl", "   ")
    assert r.is_error and "needs Python code" in r.output


def test_json_wrapped_code_through_the_registry() -> None:
    r = default_registry().call("python_repl", '{"code": "x = 2\\nx ** 10"}')
    assert not r.is_error and r.output == "1024"
    literal = default_registry().call("python_repl", '{"a": 1, "b": 2}')  # a dict literal is a program too
    assert not literal.is_error and literal.output == "{'a': 1, 'b': 2}"


def test_docstring_lists_the_allowed_modules() -> None:
    reg = default_registry()
    tool = reg.resolve("python_repl")
    assert tool is not None
    for module in ALLOWED_MODULES:
        assert module in tool.description
    assert tool.summary.startswith("Run a short Python 3 program")


@pytest.mark.parametrize(
    "code",
    [
        "class A:\n    __slots__ = ('x',)\n    def __init__(self):\n        self.x = 1",
        "class A:\n    def __eq__(self, o):\n        return True\n    __hash__ = None",
        "'{:>10}|{name}|{0[1]}'.format([1, 2], name='n')",
        "'{x}'.format_map({'x': 1})",
        "if __name__ == '__main__':\n    pass",
        "super().__init__",
    ],
)
def test_policy_allows_normal_dunder_use(code: str) -> None:
    assert check_code(code).ok, check_code(code).violations


@pytest.mark.parametrize(
    "code, expected",
    [
        ("from collections import Counter\nCounter('abracadabra').most_common(2)", "[('a', 5), ('b', 2)]\n"),
        ("import collections\ncollections.UserDict({'a': 1}).copy()", "{'a': 1}\n"),
        ("len('héllo'.encode('utf-16'))", "12\n"),
        ("b'\\xff\\xfe'.decode('cp1252')", "'ÿþ'\n"),
        ("import re\nre.sub(r'\\N{EM DASH}', '-', 'a—b')", "'a-b'\n"),
        ("import time\ntime.strptime('2024', '%Y').tm_year", "2024\n"),
        ("import fractions, decimal\nfractions.Fraction.from_decimal(decimal.Decimal('0.5'))", "Fraction(1, 2)\n"),
        ("import random\nrandom.seed('text seed')\nrandom.random() < 1", "True\n"),
    ],
)
def test_stdlib_imports_made_lazily_inside_allowed_modules(code: str, expected: str) -> None:
    """Allowed modules import helpers inside functions; they are loaded before the child drops privileges."""
    assert run_ok(code) == expected


def test_memoized_recursion_runs_deep_and_recursion_through_other_built_ins_ends_with_a_clear_line() -> None:
    """CPython for WASI has a small C stack. lru_cache uses the pure-Python wrapper there, so a memoized recursion
    runs as deep as the recursion limit allows; ~100 levels through another built-in (sorted's key) exhaust the
    stack, and the runtime stops that program alone, saying why (docs/tools.md, "What does not hold")."""
    memo = ("from functools import lru_cache, cache\n@lru_cache(maxsize=None)\n"
            "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
            "@cache\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\nprint(fib(300) % 1000, depth(400))")
    assert run_ok(memo) == "600 400\n"
    deep = "def f(n):\n    return 0 if n == 0 else sorted([n], key=lambda x: f(n - 1))[0]\nprint(f(300))"
    result = run_python(deep, LIMITS)
    assert result.status == "crashed" and "exhausted the interpreter's stack" in result.error
    assert run_ok("print(1 + 1)") == "2\n"
