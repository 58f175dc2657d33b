"""``calculate``: arithmetic on an allow-listed AST, with bounds that make huge results fail fast.

Nothing here calls ``eval``. The expression is parsed with :mod:`ast` and walked by
:func:`evaluate`, which knows only numbers, ``+ - * / // % **``, unary signs, comparisons
and a few math functions and constants. Every integer result is kept under
:data:`MAX_INT_BITS` and exponents are checked *before* the power is computed, so
``9**9**9`` or ``factorial(10**6)`` are refused in microseconds instead of pinning a core.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from typing import Any

from tools.registry import ToolFailure, tool

MAX_EXPRESSION_CHARS = 1000
MAX_INT_BITS = 10_000  # ~3,000 decimal digits: more than any sane answer, still instant to compute and print
MAX_DIGITS = int(MAX_INT_BITS * math.log10(2))
MAX_FACTORIAL = 1000
MAX_ROUND_DIGITS = 100


class CalcError(ToolFailure):
    """The expression was refused or could not be evaluated; the message says why."""


def _factorial(n: Any) -> int:
    if isinstance(n, float):
        if not n.is_integer():
            raise CalcError("factorial() needs a whole number.")
        n = int(n)
    if n < 0:
        raise CalcError("factorial() is not defined for negative numbers.")
    if n > MAX_FACTORIAL:
        raise CalcError(f"factorial({n}) is too large to compute here (limit: factorial({MAX_FACTORIAL})).")
    return math.factorial(n)


def _round(x: Any, ndigits: Any = None) -> Any:
    if ndigits is None:
        return round(x)
    if not isinstance(ndigits, int) or abs(ndigits) > MAX_ROUND_DIGITS:
        raise CalcError(f"round() takes a whole number of digits between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}.")
    return round(x, ndigits)


def _log(x: Any, base: Any = None) -> float:
    return math.log(x) if base is None else math.log(x, base)


def _minmax(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any) -> Any:
        if not args:
            raise CalcError(f"{fn.__name__}() needs at least one number.")
        return fn(args)

    return wrapped


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": _log,
    "ln": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "abs": abs,
    "round": _round,
    "min": _minmax(min),
    "max": _minmax(max),
    "factorial": _factorial,
    "floor": math.floor,
    "ceil": math.ceil,
}
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: _power(a, b),
}
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_OP_SYMBOLS = {
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^ (bitwise)",
    ast.MatMult: "@",
    ast.Invert: "~",
    ast.Not: "not",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_NODE_NAMES = {
    ast.List: "lists",
    ast.Tuple: "tuples (use a single expression)",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.ListComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.Lambda: "lambdas",
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.BoolOp: "and/or",
    ast.IfExp: "if/else",
    ast.JoinedStr: "strings",
    ast.NamedExpr: "assignment",
    ast.Starred: "*arguments",
}


def _power(base: Any, exp: Any) -> Any:
    if isinstance(base, int) and isinstance(exp, int) and exp > 0 and abs(base) > 1:
        # Check the size of the result before computing it: log2(result) = exp * log2(|base|).
        if exp.bit_length() > 64 or exp * math.log2(abs(base)) > MAX_INT_BITS:
            raise CalcError(
                f"Refused: {_short(base)}**{_short(exp)} would have about {_digits(base, exp)} digits "
                f"(limit ~{MAX_DIGITS:,} digits)."
            )
    result = base**exp  # float powers overflow with OverflowError on their own
    if isinstance(result, complex):
        raise CalcError("Refused: a negative number to a fractional power has no real result.")
    return result


def _short(n: int) -> str:
    text = str(n) if n.bit_length() < 200 else f"<{int(n.bit_length() * math.log10(2))}-digit number>"
    return f"({text})" if n < 0 else text


def _digits(base: int, exp: int) -> str:
    log10_digits = math.log10(exp) + math.log10(math.log10(abs(base)))
    if log10_digits < 15:
        return f"{10**log10_digits:,.0f}"
    return f"10^{log10_digits:.0f}"


def _check_int(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise CalcError(f"Refused: the result has more than ~{MAX_DIGITS:,} digits.")
    if isinstance(value, float) and math.isinf(value):
        raise CalcError("Refused: result too large (float overflow to infinity).")
    return value


def evaluate(expression: str) -> Any:
    """Parse and evaluate ``expression``; raise :class:`CalcError` with a readable reason on refusal."""
    text = normalize_expression(expression)
    if not text:
        raise CalcError("Empty expression: give an arithmetic expression such as 2 * (3 + 4).")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise CalcError(f"Expression too long ({len(text)} characters; limit {MAX_EXPRESSION_CHARS}).")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        msg = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        hint = " Note: implicit multiplication is not supported: write 2*pi, not 2pi." if _IMPLICIT.search(text) else ""
        raise CalcError(f"Could not parse '{text}': {msg}.{hint}") from None
    try:
        return _eval(tree.body, depth=0)
    except CalcError:
        raise
    except ZeroDivisionError:
        raise CalcError("Division by zero.") from None
    except OverflowError:
        raise CalcError("Refused: result too large (float overflow).") from None
    except (ValueError, TypeError) as exc:
        raise CalcError(f"Math error: {exc}.") from None
    except RecursionError:
        raise CalcError("Expression nested too deeply.") from None


def _eval(node: ast.AST, depth: int) -> Any:
    if depth > 100:
        raise CalcError("Expression nested too deeply.")
    depth += 1
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            kind = "complex numbers" if isinstance(value, complex) else f"{type(value).__name__} values"
            if isinstance(value, str):
                kind = "strings"
            raise CalcError(f"Refused: only numbers are allowed, not {kind}.")
        return _check_int(value)
    if isinstance(node, ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise CalcError(
                f"Refused: operator {_OP_SYMBOLS.get(type(node.op), type(node.op).__name__)} is not supported."
            )
        return _check_int(op(_eval(node.left, depth), _eval(node.right, depth)))
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.USub):
            return -_eval(node.operand, depth)
        if isinstance(node.op, ast.UAdd):
            return +_eval(node.operand, depth)
        raise CalcError(f"Refused: operator {_OP_SYMBOLS.get(type(node.op), '?')} is not supported.")
    if isinstance(node, ast.Compare):
        left = _eval(node.left, depth)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            fn = _CMPOPS.get(type(op))
            if fn is None:
                raise CalcError(f"Refused: comparison {_OP_SYMBOLS.get(type(op), '?')} is not supported.")
            right = _eval(comparator, depth)
            if not fn(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id in FUNCTIONS:
            raise CalcError(f"{node.id} is a function: call it like {node.id}(2).")
        raise CalcError(f"Unknown name '{node.id}'. {_known()}")
    if isinstance(node, ast.Call):
        return _call(node, depth)
    name = _NODE_NAMES.get(type(node), type(node).__name__)
    raise CalcError(f"Refused: {name} not supported; only arithmetic on numbers.")


def _call(node: ast.Call, depth: int) -> Any:
    if not isinstance(node.func, ast.Name):
        if isinstance(node.func, (ast.Constant, ast.BinOp, ast.UnaryOp)):
            raise CalcError("Refused: implicit multiplication is not supported; write 2*(3+4), not 2(3+4).")
        raise CalcError(f"Refused: only these functions can be called: {', '.join(FUNCTIONS)}.")
    fn = FUNCTIONS.get(node.func.id)
    if fn is None:
        raise CalcError(f"Unknown function '{node.func.id}'. {_known()}")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise CalcError(f"Refused: {node.func.id}() takes plain positional numbers only.")
    args = [_eval(a, depth) for a in node.args]
    try:
        return _check_int(fn(*args))
    except TypeError as exc:
        raise CalcError(f"Bad arguments for {node.func.id}(): {exc}.") from None
    except ValueError as exc:
        raise CalcError(f"Math error in {node.func.id}(): {exc}.") from None


def _known() -> str:
    return f"Known functions: {', '.join(FUNCTIONS)}; constants: {', '.join(CONSTANTS)}."


_IMPLICIT = re.compile(r"\d[ \t]*[A-Za-z_(]")
_THOUSANDS = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w.]|,\d)")
_CALL_OPEN = re.compile(r"[A-Za-z_]\w*\s*$")


def normalize_expression(expression: str) -> str:
    """Accept what people write: ``^`` for power, ``×``/``÷``/``−``, a trailing ``=``, ``1,234`` (outside calls)."""
    text = str(expression or "").strip().strip("`").strip()
    text = re.sub(r"\s*=\s*\??\s*$", "", text)  # "2 + 2 =" or "2+2 = ?"
    for a, b in (
        ("×", "*"),
        ("·", "*"),
        ("⋅", "*"),
        ("÷", "/"),
        ("−", "-"),
        ("–", "-"),
        ("^", "**"),
        ("π", "pi"),
        ("√", "sqrt"),
    ):
        text = text.replace(a, b)
    return _strip_thousands(text)


def _strip_thousands(text: str) -> str:
    """Drop thousands separators ("1,234,567") except inside a function call's parentheses,
    where commas separate arguments: min(1,234) stays min(1, 234)."""
    out: list[str] = []
    stack: list[bool] = []  # True for a call's parentheses
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            stack.append(bool(_CALL_OPEN.search(text[:i])))
        elif ch == ")" and stack:
            stack.pop()
        if not any(stack):
            m = _THOUSANDS.match(text, i)
            if m:
                out.append(m.group().replace(",", ""))
                i = m.end()
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def format_number(value: Any) -> str:
    """``20`` not ``20.0``; floats to 15 significant digits so ``0.1 + 0.2`` shows ``0.3``."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.15g}"
    return str(value)


@tool(timeout_s=5, verb="computed")
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. `(3.5 + 2) * 4 / 7` or `sqrt(2) * 10**3`.
    Input: the expression only.

    Supports numbers, + - * / // % ** (also ^, × and ÷), parentheses, comparisons (< <= > >= == !=),
    sqrt, log (natural; log(x, base)), log10, log2, exp, sin, cos, tan (radians), abs, round, min, max,
    floor, ceil, factorial (up to 1000), and the constants pi, e, tau. A trailing "=" is ignored and
    thousands separators such as 1,234,567 are accepted outside function calls (inside a call, commas
    separate arguments: max(1,234) is max(1, 234)). Results too large to compute quickly are refused.
    """
    return format_number(evaluate(expression))
