"""egglog's compiled bindings (``egglog.bindings``) without egglog's Python front end.

eggpu drives egglog only through ``egglog.bindings.EGraph`` (programs as text). ``import
egglog.bindings`` runs the package's ``__init__`` first, which imports egglog's Python front end
(its expression DSL, type checker and pretty printer, which imports ``black``): about 60 % of
the optimizer's set-up in a fresh process, none of it used. :func:`bindings` loads the compiled
extension module directly from the installed ``egglog`` package directory and registers it as
``egglog.bindings``, so a later ``import egglog`` (by the user, or by anything else) finds and
reuses the same module instead of loading it twice. Where egglog is not installed as files
(no extension module next to the package), it falls back to the ordinary import.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType

_NAME = "egglog.bindings"
_lock = threading.Lock()


def bindings() -> ModuleType:
    """The ``egglog.bindings`` extension module (loaded once per process; see the module docstring)."""
    mod = sys.modules.get(_NAME)
    if mod is not None:
        return mod
    with _lock:
        mod = sys.modules.get(_NAME)
        if mod is None:
            mod = _load_extension() or importlib.import_module(_NAME)
        return mod


def _load_extension() -> ModuleType | None:
    """Load egglog's compiled module without running ``egglog/__init__.py`` (None when the
    package or its extension module cannot be found that way)."""
    pkg = importlib.util.find_spec("egglog")  # finds the package: does not execute it
    if pkg is None or not pkg.submodule_search_locations:
        return None
    spec = importlib.machinery.PathFinder.find_spec("bindings", list(pkg.submodule_search_locations))
    if spec is None or not isinstance(spec.loader, importlib.machinery.ExtensionFileLoader):
        return None
    spec = importlib.util.spec_from_file_location(_NAME, spec.origin)
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(_NAME, None)
        raise
    if "egglog" in sys.modules:  # imported meanwhile (another thread): give it its attribute
        sys.modules["egglog"].bindings = mod  # type: ignore[attr-defined]
    else:
        sys.meta_path.insert(0, _AttachOnImport())
    return mod


class _AttachOnImport(importlib.abc.MetaPathFinder):
    """When ``egglog`` itself is imported later, set its ``bindings`` attribute to the module
    loaded here (an import finds a submodule already in ``sys.modules`` but does not set the
    parent's attribute), so ``import egglog; egglog.bindings`` works as usual. One-shot."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != "egglog":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("egglog")
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            module.bindings = sys.modules.get(_NAME, getattr(module, "bindings", None))

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


__all__ = ["bindings"]
