"""The type stubs describe the module: every public name of ncsde and ncsde.models has a stub and
every stub names something that exists, with the same parameters for the functions."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import ncsde

PACKAGE = Path(ncsde.__file__).parent


def stub_definitions(path: Path) -> dict[str, ast.AST]:
    """The stub's functions and classes, and its annotated module variables (ncsde.limits)."""
    tree = ast.parse(path.read_text())
    out = {node.name: node for node in tree.body
           if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    out.update({node.target.id: node for node in tree.body
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and not node.target.id.startswith("__")})
    return out


def parameter_names(node: ast.FunctionDef) -> list[str]:
    a = node.args
    return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]


def runtime_parameter_names(f) -> list[str] | None:
    """A Python function's parameters, or those pybind11 writes into the first line of a compiled
    function's docstring."""
    try:
        return [p.name for p in inspect.signature(f).parameters.values()
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    except ValueError:  # a compiled function: no signature
        pass
    doc = (f.__doc__ or "").splitlines()
    if not doc or "(" not in doc[0]:
        return None
    inside = doc[0][doc[0].index("(") + 1:doc[0].rindex(")")]
    names = []
    for part in inside.split(", "):
        name = part.split(":")[0].strip().lstrip("*")
        if name and name not in ("kwargs",):
            names.append(name)
    return names


def test_every_public_name_has_a_stub_and_back():
    for module, stub in ((ncsde, PACKAGE / "__init__.pyi"), (ncsde.models, PACKAGE / "models.pyi")):
        defined = stub_definitions(stub)
        public = {n for n in module.__all__ if not n.startswith("__") and n not in ("models", "plots")}
        assert public == set(defined), (stub.name, public ^ set(defined))
        for name, node in defined.items():
            obj = getattr(module, name)
            if isinstance(node, ast.FunctionDef):
                names = runtime_parameter_names(obj)
                if names is not None:
                    assert parameter_names(node) == names, (name, parameter_names(node), names)
            elif isinstance(node, ast.AnnAssign):
                assert not callable(obj), name  # a variable of the module
            else:
                stub_members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                stub_members |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
                for member in stub_members - {"__init__"}:
                    assert hasattr(obj, member), (name, member)
                runtime = {n for n in vars(obj) if not n.startswith("_")}  # its own, not inherited
                assert runtime <= stub_members, (name, runtime - stub_members)


def registry_schemes(ncsde_program) -> list[str]:
    import subprocess

    listed = subprocess.run([ncsde_program, "convergence", "--list-schemes"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL).stdout
    return [line.split()[0] for line in listed.splitlines()[1:] if line.strip()]


def test_the_scheme_literal_and_the_plot_colours_follow_the_registry(ncsde_program):
    # The stub's Scheme literal names the registry's schemes in its order, and the convergence
    # plot gives each of them its own colour (from the names the program passes, no list there).
    import importlib.util

    schemes = registry_schemes(ncsde_program)
    assert len(schemes) >= 4 and schemes[0] == "em"
    tree = ast.parse((PACKAGE / "__init__.pyi").read_text())
    literal = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                   and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "Scheme")
    assert [element.value for element in literal.slice.elts] == schemes
    script = Path(__file__).resolve().parents[2] / "validation" / "plots" / "convergence_plot.py"
    spec = importlib.util.spec_from_file_location("convergence_plot", script)
    plot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot)
    colours = plot.scheme_colours(schemes, [{"scheme": "a-new-scheme"}])
    assert set(colours) == {*schemes, "a-new-scheme"}
    assert len(set(colours.values())) == len(colours)
