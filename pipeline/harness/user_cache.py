"""Loading a user's cache for scoring: a module (dotted name or .py file) exposing `cache`, or a
class of it built with no arguments. The one loader used by `cacheeval eval` (pipeline.app.cli) and by
the quarterly slice's user-module targets (pipeline.stages), standard library only; a loading
problem is one InputError line that names the module and the fix."""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable

from pipeline.core.errors import InputError
from pipeline.harness.stateful import is_store_lookup


def _import_module(spec: str) -> Any:
    """Import a dotted module name, or a .py file given by path."""
    path = Path(spec)
    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        if not path.is_file():
            raise InputError(f"--cache-module {spec}: file not found. Pass an existing .py file or a dotted module name")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # so the module can import its neighbours, as `python file.py` would
        name = f"cacheeval_user_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"--cache-module {spec}: cannot load this file as Python. Pass a .py file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            sys.modules.pop(name, None)
            raise InputError(f"--cache-module {spec}: importing it raised {one_line(exc)}. Fix the module") from None
        return module
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)  # a user's own module next to where they run the command
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and (spec == exc.name or spec.startswith(exc.name + ".")):
            raise InputError(f"--cache-module {spec}: no module named '{exc.name}'. Pass a dotted module "
                             "importable from the current directory, or a path to a .py file") from None
        raise InputError(f"--cache-module {spec}: importing it raised {one_line(exc)}. Fix the module") from None
    except Exception as exc:
        raise InputError(f"--cache-module {spec}: importing it raised {one_line(exc)}. Fix the module") from None


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_cache(module_spec: str, class_name: str | None) -> tuple[Callable[[Any], Any], str]:
    """(cache, default name) from a module exposing `cache` or a class `class_name`. The cache is
    a `pair -> verdict` callable, or a store/lookup object (pipeline.harness.stateful)."""
    module = _import_module(module_spec)
    if class_name is None:
        obj = getattr(module, "cache", None)
        if obj is None:
            raise InputError(f"--cache-module {module_spec}: no attribute named 'cache'. Define "
                             "`cache(pair) -> Verdict` in the module, or pass --cache-class NAME")
        default_name = Path(module_spec).stem if module_spec.endswith(".py") else module_spec
    else:
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            found = sorted(n for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("_"))
            raise InputError(f"--cache-class {class_name}: no class of that name in {module_spec}. "
                             f"Classes there: {', '.join(found) or '(none)'}")
        try:
            obj = cls()
        except Exception as exc:
            raise InputError(f"--cache-class {class_name}: {class_name}() raised {one_line(exc)}. "
                             "The class must be built with no arguments") from None
        default_name = class_name
    if is_store_lookup(obj) and not isinstance(obj, type):
        return obj, default_name
    if callable(obj) and not isinstance(obj, type):
        return obj, default_name
    decide = getattr(obj, "decide", None)
    if callable(decide):
        return decide, default_name
    what = "'cache'" if class_name is None else f"a {class_name} instance"
    raise InputError(f"--cache-module {module_spec}: {what} is neither callable nor has a decide(pair) method. "
                     "Make it a function of the pair, or give the class __call__ or decide")
