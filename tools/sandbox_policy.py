"""Layer 1 of the ``python_repl`` sandbox: a static policy check on the AST, before anything runs.

:func:`check_code` refuses, with the line and the reason, whatever could reach the interpreter's internals
(forbidden imports, dunders, frames, getattr or eval in disguise; the list is :class:`_Checker`'s). It is
deliberately conservative: a refused program is usually easy to rewrite, and one wrongly accepted still meets
layers 2 and 3 in :mod:`tools.sandbox` (see docs/tools.md, "The Python sandbox").
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass, field

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
BUILTIN_MATCH_CLASSES = frozenset(
    {"int", "float", "complex", "str", "bytes", "bytearray", "bool", "list", "tuple", "dict", "set", "frozenset"}
)
MAX_CODE_CHARS = 50_000


@dataclass
class PolicyReport:
    """What the checker found: refusals (``line N: reason``) and the top-level modules the code imports
    (allowed or not: the runner preloads only the allowed ones)."""

    violations: list[str] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)
    syntax_error: str | None = None

    @property
    def ok(self) -> bool:
        return not self.violations and self.syntax_error is None

    def message(self, limit: int = 5) -> str:
        if self.syntax_error:
            return self.syntax_error
        shown = self.violations[:limit]
        more = f" (and {len(self.violations) - limit} more)" if len(self.violations) > limit else ""
        return "Refused before running (nothing was executed): " + "; ".join(shown) + more


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class _Checker(ast.NodeVisitor):
    """Walks the AST and refuses:

    * imports outside :data:`ALLOWED_MODULES` (and relative imports, and private names from them);
    * dunder names (``__builtins__``, ``__import__``, ``__loader__`` …) except reading ``__name__``,
      and dunder *attributes* except the harmless ones in :data:`SAFE_DUNDER_ATTRS`
      (``__name__``/``__doc__`` and protocol methods such as ``super().__init__``). Defining dunder
      methods (``__init__``, ``__repr__`` …) in a class is fine;
    * frame / generator / traceback / code attributes (``gi_frame``, ``f_back``, ``tb_frame``,
      ``co_code`` …), which lead back to real globals;
    * the builtins in :data:`BLOCKED_NAMES` (``eval``, ``exec``, ``open``, ``getattr`` …);
    * module members that are getattr or eval in disguise (:data:`BLOCKED_ATTRS`:
      ``operator.attrgetter``, ``string.Formatter``, ``functools.update_wrapper`` …);
    * ``str.format`` / ``format_map`` unless called on a string literal whose fields do not
      reach attributes (``"{0.__class__}"`` is refused, ``"{:.2f}"`` is fine);
    * ``match`` class patterns that would read attributes by name (``case C(gi_frame=f)``, or
      positional patterns on anything but builtin types, whose ``__match_args__`` could name any
      attribute).
    """

    def __init__(self) -> None:
        self.report = PolicyReport()
        self._scopes: list[str] = ["module"]

    def refuse(self, node: ast.AST, reason: str) -> None:
        line = getattr(node, "lineno", "?")
        msg = f"line {line}: {reason}"
        if msg not in self.report.violations:
            self.report.violations.append(msg)

    # --- imports -------------------------------------------------------------------------------
    def _check_module(self, node: ast.AST, name: str) -> bool:
        if name:
            self.report.imports.add(name.split(".")[0])
        if name in ALLOWED_MODULES or name in ALLOWED_SUBMODULES:
            return True
        allowed = ", ".join(sorted(ALLOWED_MODULES))
        self.refuse(node, f"import of '{name}' is not allowed (allowed modules: {allowed})")
        return False

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.refuse(node, "relative imports are not allowed")
            return
        if not self._check_module(node, node.module or ""):
            return
        for alias in node.names:
            if alias.name.startswith("_"):
                self.refuse(node, f"importing the private name '{alias.name}' is not allowed")
            elif alias.name in BLOCKED_ATTRS:
                self.refuse(node, f"'{node.module}.{alias.name}' is not available (it reads attributes by name)")

    # --- names and attributes ------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load):
            if name in BLOCKED_NAMES:
                self.refuse(node, f"'{name}' is not available in this sandbox")
            elif _is_dunder(name) and name != "__name__":
                self.refuse(node, f"access to the special name '{name}' is not allowed")
        elif _is_dunder(name):
            if self._scopes[-1] != "class" or name in BLOCKED_CLASS_DUNDERS:
                self.refuse(node, f"assigning the special name '{name}' is not allowed")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check_attr(node, node.attr)
        if node.attr in ("format", "format_map"):
            self._check_format_receiver(node)
        self.generic_visit(node)

    def _check_attr(self, node: ast.AST, attr: str) -> None:
        if _is_dunder(attr):
            if attr not in SAFE_DUNDER_ATTRS:
                self.refuse(node, f"access to the special attribute '{attr}' is not allowed")
        elif attr in FRAME_ATTRS or attr.startswith(FRAME_PREFIXES):
            self.refuse(node, f"access to the interpreter internals '.{attr}' is not allowed")
        elif attr in BLOCKED_ATTRS:
            self.refuse(node, f"'.{attr}' is not available (it reads attributes by name)")

    def _check_format_receiver(self, node: ast.Attribute) -> None:
        recv = node.value
        if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
            self.refuse(node, f".{node.attr}() is only allowed on a string literal; use an f-string instead")
            return
        problem = _format_fields_problem(recv.value)
        if problem:
            self.refuse(node, problem)

    def visit_Global(self, node: ast.Global) -> None:
        self._check_decl(node, node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._check_decl(node, node.names)

    def _check_decl(self, node: ast.AST, names: list[str]) -> None:
        for name in names:
            if _is_dunder(name):
                self.refuse(node, f"declaring the special name '{name}' is not allowed")

    def visit_arg(self, node: ast.arg) -> None:
        if _is_dunder(node.arg):
            self.refuse(node, f"a parameter named '{node.arg}' is not allowed")
        self.generic_visit(node)

    # --- scopes --------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(expr)
        self._scopes.append("class")
        for stmt in node.body:
            self.visit(stmt)
        self._scopes.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            for expr in node.decorator_list:
                self.visit(expr)
            if node.returns:
                self.visit(node.returns)
        self.visit(node.args)
        self._scopes.append("function")
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self.visit(stmt)
        self._scopes.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function
    visit_Lambda = _visit_function

    # --- pattern matching ----------------------------------------------------------------------
    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            self._check_attr(node, attr)
            if _is_dunder(attr):
                self.refuse(node, f"matching on the attribute '{attr}' is not allowed")
        if node.patterns and not (isinstance(node.cls, ast.Name) and node.cls.id in BUILTIN_MATCH_CLASSES):
            self.refuse(node, "positional class patterns are only allowed for builtin types; use keyword patterns")
        self.generic_visit(node)


def _format_fields_problem(fmt: str, depth: int = 0) -> str | None:
    """Why a str.format template is unsafe (a field reaching an attribute), or None."""
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError as exc:
        return f"invalid format string: {exc}"
    for _literal, field_name, spec, _conv in parsed:
        if field_name and "." in field_name:
            return f"format field '{{{field_name}}}' reads an attribute; use an f-string instead"
        if spec and depth < 2:
            problem = _format_fields_problem(spec, depth + 1)
            if problem:
                return problem
    return None


def check_code(code: str) -> PolicyReport:
    """Parse ``code`` and apply the policy. Never raises."""
    report = PolicyReport()
    if len(code) > MAX_CODE_CHARS:
        report.violations.append(f"program too long ({len(code)} characters; limit {MAX_CODE_CHARS})")
        return report
    try:
        tree = ast.parse(code, filename="<repl>", mode="exec")
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        text = f"\n    {exc.text.rstrip()}" if exc.text and exc.text.strip() else ""
        report.syntax_error = f"SyntaxError: {exc.msg}{where}{text}"
        return report
    except (ValueError, RecursionError, MemoryError) as exc:
        report.syntax_error = f"Could not parse the program: {type(exc).__name__}"
        return report
    checker = _Checker()
    try:
        checker.visit(tree)
    except RecursionError:
        checker.report.violations.append("program nested too deeply to check")
    return checker.report
