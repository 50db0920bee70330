"""Our names in transformers' function registries, without importing transformers for it.

``from_pretrained(..., attn_implementation="ascendc_fused_attention")`` (or ``experts_implementation=
"ascendc_fused_moe"``) must work once ascendc_ops is imported, whatever the import order. Importing transformers
at ``import ascendc_ops`` did that, at 3.5 s of CPU for every process, most of which never touch a model (the
CLI, the harness, distributed workers). Instead each entry is put in its registry when the registry's module
finishes executing: at once if it already has, else by a finder on ``sys.meta_path`` that wraps that one module's
loader (and removes itself when nothing is left to register). ``ensure`` imports the module when a kernel needs
the entry now; it says False where the module or the registry is absent (transformers 4.x or none).
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
from collections.abc import Callable

# module name -> [(registry attribute, our name, function)]
_PENDING: dict[str, list[tuple[str, str, Callable | str]]] = {}
_DONE: set[tuple[str, str, str]] = set()


def _register(module, entries) -> None:
    for attr, name, fn in entries:
        functions = getattr(module, attr, None)
        if isinstance(fn, str):  # a function of that module itself (the mask registry's sdpa_mask)
            fn = getattr(module, fn, None)
        if functions is None or fn is None:  # transformers without this registry: nothing to plug into
            continue
        if functions.get(name) is not fn:
            functions.register(name, fn)
        _DONE.add((module.__name__, attr, name))


class _AfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in _PENDING:
            return None
        for finder in sys.meta_path:  # the spec the rest of the import system would give
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _register(module, _PENDING.pop(fullname, []))
            if not _PENDING and _HOOK in sys.meta_path:
                sys.meta_path.remove(_HOOK)

        spec.loader.exec_module = exec_module  # this import's loader object only
        return spec


_HOOK = _AfterImport()


def register_when_imported(module_name: str, attr: str, name: str, fn: Callable | str) -> None:
    """Puts fn (or the module's function of that name) under name in ``<module_name>.<attr>`` (a transformers
    registry) as soon as that module exists."""
    module = sys.modules.get(module_name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        _register(module, [(attr, name, fn)])
        return
    _PENDING.setdefault(module_name, []).append((attr, name, fn))
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)


def ensure(module_name: str, attr: str, name: str) -> bool:
    """Whether our name is in that registry, importing its module if no one has yet."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:  # transformers absent
        return False
    _register(module, _PENDING.pop(module_name, []))  # one still pending (the module was mid-import at ours)
    return (module_name, attr, name) in _DONE
