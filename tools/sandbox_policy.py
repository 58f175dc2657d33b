"""Layer 1 of the ``python_repl`` sandbox: a static policy check on the AST, before anything runs.

:func:`check_code` refuses, with the line and the reason, whatever could reach the interpreter's internals
(forbidden imports, dunders, frames, getattr or eval in disguise, classes that would see the attributes library
code reads or writes by name; the list is :class:`_Checker`'s; the tables are :mod:`tools.sandbox_names`). It
is deliberately conservative: a refused program is usually easy to rewrite, and one wrongly accepted still meets
the restricted builtins, then the boundary (see docs/tools.md, "The Python sandbox").
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass, field

from tools.sandbox_names import (
    ALLOWED_MODULES,
    ALLOWED_SUBMODULES,
    ATTRIBUTE_HOOKS,
    BLOCKED_ATTRS,
    BLOCKED_CLASS_DUNDERS,
    BLOCKED_NAMES,
    BUILTIN_MATCH_CLASSES,
    CACHED_PROPERTY_NAME,
    CLASS_DUNDERS,
    COPY_HOOKS,
    FORMAT_METHODS,
    FRAME_ATTRS,
    FRAME_PREFIXES,
    MAX_CODE_CHARS,
    SAFE_DUNDER_ATTRS,
    SLOT_DUNDERS,
    STAR_IMPORT_REFUSED,
    WRAPS,
)


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
      (``__name__``/``__doc__`` and protocol methods such as ``super().__init__``). Binding a dunder name
      is refused however it is spelled (``=``, ``def``, ``class``, ``import … as``, ``except … as``,
      ``case … as``), except in a class body, which may define the special methods in
      :data:`CLASS_DUNDERS` (``__init__``, ``__repr__``, ``__eq__``, ``__len__``, ``__get__`` …) but not
      the attribute hooks (``__getattr__``, ``__getattribute__``, ``__setattr__``, ``__delattr__``), the
      copy/pickle hooks (``__reduce__``, ``__copy__`` …), ``__class__``/``__dict__``/``__match_args__``,
      nor dunder or computed ``__slots__``;
    * frame / generator / traceback / code attributes (``gi_frame``, ``f_back``, ``tb_frame``,
      ``co_code`` …), which lead back to real globals;
    * the builtins in :data:`BLOCKED_NAMES` (``eval``, ``exec``, ``open``, ``getattr`` …);
    * module members that are getattr or eval in disguise (:data:`BLOCKED_ATTRS`:
      ``operator.attrgetter``, ``string.Formatter``, ``functools.update_wrapper`` …), and star imports
      of the modules that have them;
    * ``functools.wraps`` anywhere but ``@functools.wraps(func)`` / ``@wraps(func)`` as the innermost
      decorator of a ``def``; assigning ``.attrname`` (``functools.cached_property``'s key);
      ``type()`` with three arguments (a class built from data);
    * ``str.format`` / ``format_map`` unless called on a string literal whose fields do not
      reach attributes (``"{0.__class__}"`` is refused, ``"{:.2f}"`` is fine), and matching them
      out of an object (``case object(format=f)``);
    * ``match`` class patterns that would read attributes by name (``case C(gi_frame=f)``, or
      positional patterns on anything but builtin types, whose ``__match_args__`` could name any
      attribute).
    """

    def __init__(self) -> None:
        self.report = PolicyReport()
        self._scopes: list[str] = ["module"]
        self._wraps_ok: set[int] = set()  # ids of the ``wraps`` nodes in an allowed decorator position
        self._slots_ok: set[int] = set()  # ids of the ``__slots__ = <literal names>`` targets

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
            self._check_binding(node, alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.refuse(node, "relative imports are not allowed")
            return
        if not self._check_module(node, node.module or ""):
            return
        for alias in node.names:
            if alias.name == "*":
                if node.module in STAR_IMPORT_REFUSED:
                    self.refuse(node, f"'from {node.module} import *' is not allowed; import the names you need")
                continue
            if alias.name.startswith("_"):
                self.refuse(node, f"importing the private name '{alias.name}' is not allowed")
            elif alias.name in BLOCKED_ATTRS:
                self.refuse(node, f"'{node.module}.{alias.name}' is not available (it reads attributes by name)")
            elif alias.name == WRAPS and alias.asname not in (None, WRAPS):
                self.refuse(node, f"'{node.module}.wraps' must be imported under its own name")
            self._check_binding(node, alias.asname or alias.name)

    # --- names and attributes ------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load):
            if name in BLOCKED_NAMES:
                self.refuse(node, f"'{name}' is not available in this sandbox")
            elif _is_dunder(name) and name != "__name__" and not self._class_own(name):
                self.refuse(node, f"access to the special name '{name}' is not allowed")
            elif name == WRAPS and id(node) not in self._wraps_ok:
                self._refuse_wraps(node)
        else:
            self._check_binding(node, name)

    def _class_own(self, name: str) -> bool:
        """A special method read in the class body that defines it (``__radd__ = __add__``)."""
        return self._scopes[-1] == "class" and name in CLASS_DUNDERS

    def _check_binding(self, node: ast.AST, name: str | None) -> None:
        """Any way of binding (or deleting) a name: dunders only in a class body, and only the harmless ones.

        (``except E as __builtins__`` deletes the name when the handler ends: in a CodeAct session the next
        program would then run with the real builtins.)"""
        if not name or not _is_dunder(name):
            return
        if self._scopes[-1] != "class" or name in BLOCKED_CLASS_DUNDERS:
            self.refuse(node, f"assigning the special name '{name}' is not allowed")
        elif name == "__slots__":
            if id(node) not in self._slots_ok:
                self.refuse(node, "__slots__ must be assigned a literal list of plain attribute names")
        elif name in ATTRIBUTE_HOOKS:
            self.refuse(
                node,
                f"a class may not define '{name}' in this sandbox (it would see every attribute "
                "that library code reads or writes on it by name)",
            )
        elif name in COPY_HOOKS:
            self.refuse(
                node,
                f"a class may not define '{name}' in this sandbox (copy and pickle hooks make "
                "library code set attributes by name)",
            )
        elif name not in CLASS_DUNDERS:
            self.refuse(node, f"a class may not define the special name '{name}' in this sandbox")

    def _refuse_wraps(self, node: ast.AST) -> None:
        self.refuse(
            node,
            "'wraps' is only available as @functools.wraps(func) directly above a def "
            "(anywhere else it copies attributes by name)",
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check_attr(node, node.attr)
        if node.attr in FORMAT_METHODS:
            self._check_format_receiver(node)
        elif node.attr == WRAPS and id(node) not in self._wraps_ok:
            self._refuse_wraps(node)
        elif node.attr == CACHED_PROPERTY_NAME and not isinstance(node.ctx, ast.Load):
            self.refuse(
                node,
                "assigning '.attrname' is not allowed (functools.cached_property reads the "
                "instance's __dict__ by that name)",
            )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "type"
            and (len(node.args) > 1 or node.keywords or any(isinstance(a, ast.Starred) for a in node.args))
        ):
            self.refuse(node, "type() with three arguments builds a class from data; write a class statement")
        self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_binding(node, node.name)
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
        self._check_binding(node, node.name)
        self._check_type_params(node)
        for expr in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(expr)
        self._scopes.append("class")
        for stmt in node.body:
            target = _plain_slots_target(stmt)
            if target is not None:
                self._slots_ok.add(id(target))
            self.visit(stmt)
        self._scopes.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            self._check_binding(node, node.name)
            self._check_type_params(node)
            if node.decorator_list:
                self._allow_wraps(node.decorator_list[-1])
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

    def _allow_wraps(self, decorator: ast.expr) -> None:
        """``@wraps(func)`` / ``@<x>.wraps(func)`` as the innermost decorator: it receives the def's real function,
        whose ``__dict__`` the program cannot intercept. One positional argument, nothing else (``assigned=`` and
        ``updated=`` name the attributes to copy)."""
        if not (isinstance(decorator, ast.Call) and len(decorator.args) == 1 and not decorator.keywords):
            return
        if isinstance(decorator.args[0], ast.Starred):
            return
        func = decorator.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if name == WRAPS:
            self._wraps_ok.add(id(func))

    def _check_type_params(self, node: ast.AST) -> None:
        for param in getattr(node, "type_params", ()):  # Python 3.12: def f[T](), class C[T]
            self._check_binding(param, getattr(param, "name", None))

    def visit_TypeAlias(self, node: ast.AST) -> None:  # Python 3.12: type X[T] = ...
        self._check_type_params(node)
        self.generic_visit(node)

    # --- pattern matching ----------------------------------------------------------------------
    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            self._check_attr(node, attr)
            if _is_dunder(attr):
                self.refuse(node, f"matching on the attribute '{attr}' is not allowed")
            elif attr in FORMAT_METHODS:
                self.refuse(
                    node,
                    f"matching on the attribute '{attr}' is not allowed (it would hand out "
                    f"str.{attr} for a string built at run time); use an f-string instead",
                )
            elif attr == WRAPS:
                self._refuse_wraps(node)
        if node.patterns and not (isinstance(node.cls, ast.Name) and node.cls.id in BUILTIN_MATCH_CLASSES):
            self.refuse(node, "positional class patterns are only allowed for builtin types; use keyword patterns")
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._check_binding(node, node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._check_binding(node, node.rest)
        self.generic_visit(node)


def _plain_slots_target(stmt: ast.stmt) -> ast.Name | None:
    """The ``__slots__`` name of ``__slots__ = 'a'`` / ``('a', 'b')`` / ``['a', 'b']``, or None: string literals,
    none of them a dunder but ``__dict__``/``__weakref__`` (a slot named ``__getattr__`` would be an attribute
    hook whose value is set per instance). Any other binding of ``__slots__`` is refused."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    if not (isinstance(target, ast.Name) and target.id == "__slots__"):
        return None
    items = value.elts if isinstance(value, ast.Tuple | ast.List) else [value]
    plain = all(
        isinstance(item, ast.Constant)
        and isinstance(item.value, str)
        and (not _is_dunder(item.value) or item.value in SLOT_DUNDERS)
        for item in items
    )
    return target if plain else None


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
