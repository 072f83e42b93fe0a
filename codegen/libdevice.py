"""libdevice, NVIDIA's bitcode math library, as the PTX path links it: only what a kernel calls.

:func:`libdevice_subset` returns a fresh LLVM module holding the ``__nv_*`` functions a kernel
declares and everything they call (helpers, constant tables), nothing else. Linking that small
module instead of all of libdevice (352 definitions in CUDA 13's) gives the same final module — the
PTX path internalizes and dead-strips after linking anyway (:func:`eggpu.codegen.ptx.emit_ptx`),
and the functions keep their relative order — but skips most of the work:

- the bitcode file is read once per process (keyed by path, size and modification time, so a
  replaced file is read again);
- it is parsed once per compile that needs a new set of functions, straight from the bytes
  (parsing is cheaper than cloning a parsed module, and the parse is consumed by the link);
- the subset for a ``(file, names, triple, data layout)`` is kept as bitcode (a few KB) for the
  rest of the process, so a later compile calling the same functions parses that instead;
- and on disk, ``libdevice/<key>.bc`` in ``$EGGPU_CACHE_DIR`` (else the user cache dir), so a
  new process compiling a kernel that calls the same functions never parses libdevice at all;
- a new set of functions is cut from the *math cut*: libdevice reduced once per installation to
  every function the lowering can call (``emitter.LIBDEVICE_FUNCTIONS``; ~107 KB of ~465 KB,
  parsed in ~6 ms instead of ~25, usually beside the optimizer by :mod:`.libdevice_prefetch`),
  kept in ``toolchain/<key>.bc`` beside the ptxas version (:func:`_math_cut`). Only names outside
  that list (a ``libdevice`` op's, a hand-written module's) are cut from the whole file.
  ``key`` is the sha256 of :data:`FORMAT`, libdevice's own sha256, LLVM's version, the triple,
  the data layout and the names. Entries are read and written only through
  :mod:`eggpu.ir.cachefs` (no symlink followed, the user's own files, atomic replacement); an
  untrusted directory, an unreadable or corrupt entry, or one that does not define the names is
  ignored (the subset is then cut from libdevice and the entry rewritten). At most :data:`KEEP`
  entries are kept. ``EGGPU_LIBDEVICE_CACHE=0`` turns the disk layer off.

Edge cases: a name libdevice does not define raises :class:`LibdeviceMissing` (the caller
names the kernel); an unreadable or corrupt file raises CodegenError naming the path.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eggpu.ir.errors import CodegenError

from .toolchain import disk_get, disk_put, find_libdevice

#: the LLVM command-line option that makes NVVMReflect answer ``__CUDA_PREC_SQRT`` with 1
PREC_SQRT_OPTION = "-nvvm-reflect-add=__CUDA_PREC_SQRT=1"


def prec_sqrt() -> int:
    """The answer the PTX path gives libdevice's ``__nvvm_reflect("__CUDA_PREC_SQRT")``: 1, as nvcc's
    default ``-prec-sqrt=true`` does, where LLVM's NVVMReflect takes extra answers as an option
    (:data:`PREC_SQRT_OPTION`, LLVM 21 and later: llvmlite 0.50 has LLVM 22), else 0 (the pass's
    answer to a name it was not told; an older LLVM would stop the process on the unknown
    option). With 1, the square root inside libdevice's ``hypotf``, ``normf``, ``norm3df``,
    ``norm4df`` and ``jnf`` is the correctly rounded ``sqrt.rn`` rather than ``sqrt.approx``, so
    they have the accuracy CUDA documents for them; the other functions do not ask. The answer
    is the same with ``fast_math`` (the option is process-wide; ``fast_math`` is about eggpu's own
    operations). :mod:`.libdevice_host` answers run_cpu's builds the same way."""
    import llvmlite.binding as llvm

    return int(llvm.llvm_version_info >= (21,))

if TYPE_CHECKING:  # pragma: no cover
    import llvmlite.binding as llvm_binding

__all__ = ["LibdeviceMissing", "clear_cache", "libdevice_subset"]

# Subsets kept per process; a kernel library uses a handful of distinct sets. Past the bound
# the oldest is dropped (a dict keeps insertion order).
MAX_SUBSETS = 256

FORMAT = 1  # bump when what a subset holds changes (the cutting below)
KEEP = 64  # subsets kept on disk
KEEP_MATH = 4  # math cuts kept on disk (one per libdevice and LLVM version in use)

_LOCK = threading.Lock()
_bitcode: dict[tuple[str, int, int], tuple[bytes, str]] = {}  # file key -> (bytes, sha256)
_subsets: dict[tuple, bytes] = {}


class LibdeviceMissing(CodegenError):
    """Names a kernel declares that libdevice does not define (``missing``, in the given order)."""

    def __init__(self, missing: Sequence[str]) -> None:
        self.missing = tuple(missing)
        super().__init__(f"libdevice has no function(s) {', '.join(self.missing)}")


def clear_cache() -> None:
    """Forget the bitcode read and the subsets kept (tests; a process never needs it)."""
    with _LOCK:
        _bitcode.clear()
        _subsets.clear()


def has_subsets() -> bool:
    """Whether this process has made or loaded any subset yet (:mod:`.libdevice_prefetch`
    prefetches only for the first)."""
    return bool(_subsets)


def file_key() -> tuple[str, int, int]:
    """``(path, size, mtime_ns)`` of the installed libdevice (ToolchainError when there is none,
    CodegenError when it cannot be read)."""
    return _file_key(find_libdevice())


def _file_key(path: Path) -> tuple[str, int, int]:
    try:
        st = path.stat()
    except OSError as exc:
        raise CodegenError(f"cannot read libdevice bitcode {path}: {exc}") from exc
    return (str(path), st.st_size, st.st_mtime_ns)


def _read(key: tuple[str, int, int]) -> tuple[bytes, str]:
    """The file's bytes and their sha256 (read and hashed once per process and file key)."""
    entry = _bitcode.get(key)
    if entry is None:
        try:
            data = Path(key[0]).read_bytes()
        except OSError as exc:
            raise CodegenError(f"cannot read libdevice bitcode {key[0]}: {exc}") from exc
        entry = (data, hashlib.sha256(data).hexdigest())
        _bitcode.clear()  # one libdevice per process in practice: keep only the newest file
        _bitcode[key] = entry
    return entry


# ---------------------------------------------------------------- the disk layer


def _disk_key(sha: str, names: tuple[str, ...], triple: str, data_layout: str) -> str:
    import llvmlite.binding as llvm

    version = ".".join(map(str, llvm.llvm_version_info))
    text = "\0".join((f"libdevice-subset-{FORMAT}", sha, version, triple, data_layout, *names))
    return hashlib.sha256(text.encode()).hexdigest()


def _from_disk(key: str, names: tuple[str, ...], context=None) -> tuple[llvm_binding.ModuleRef, bytes] | None:
    """The stored subset (parsed, and its bytes), or None when there is none or it is not usable."""
    data = disk_get("libdevice", "EGGPU_LIBDEVICE_CACHE", key, ".bc")
    if data is None:
        return None
    try:
        mod = _parse_bitcode(data, key, context)
    except CodegenError:
        return None
    if not all(_defines(mod, n) for n in names):
        return None
    return mod, data


def _parse_bitcode(data: bytes, what: str, context=None) -> llvm_binding.ModuleRef:
    import llvmlite.binding as llvm

    try:
        return llvm.parse_bitcode(data, context=context)
    except RuntimeError as exc:
        raise CodegenError(f"cannot read libdevice bitcode {what}: {exc}") from exc


def _defines(mod: llvm_binding.ModuleRef, name: str) -> bool:
    try:
        return not mod.get_function(name).is_declaration
    except NameError:
        return False


def internalize(mod: llvm_binding.ModuleRef, names: Sequence[str]) -> None:
    """Give every definition but ``names`` internal linkage, so dead-code elimination may
    drop whatever the kept ones do not reach."""
    import llvmlite.binding as llvm

    keep = set(names)
    for fn in mod.functions:
        if not fn.is_declaration and fn.name not in keep:
            fn.linkage = llvm.Linkage.internal
    for gv in mod.global_variables:
        if not gv.is_declaration:
            gv.linkage = llvm.Linkage.internal


def strip_to(mod: llvm_binding.ModuleRef, names: Sequence[str], pass_builder) -> None:
    """Internalize every definition but ``names``, then drop whatever nothing kept reaches.
    ``pass_builder`` must be new and is used up (one run per builder: eggpu.codegen.ptx._run)."""
    import llvmlite.binding as llvm

    internalize(mod, names)
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    mpm.add_strip_dead_prototype_pass()
    mpm.run(mod, pass_builder)


def libdevice_subset(
    names: Sequence[str], triple: str, data_layout: str, new_pass_builder: Callable[[], Any], *,
    context=None,
) -> llvm_binding.ModuleRef:
    """A new module with libdevice's definitions of ``names`` and all they reach, for linking.

    ``names``: ``__nv_*`` functions (sorted by the caller, so equal sets share a cache entry).
    ``triple``/``data_layout``: set on the module, as the kernel module has them.
    ``new_pass_builder``: makes a new llvmlite pass builder for the target, called only when
    the subset is cut (for the dead-code pass; one builder per run, see :func:`strip_to`). ``context``: the LLVM context to parse into (the
    kernel module's; None: LLVM's global context).
    The module is the caller's to consume (``link_in`` destroys it). Looked up in the process,
    then on disk, before libdevice itself is parsed (see the module docstring). Raises
    :class:`LibdeviceMissing` for names libdevice does not define, CodegenError when the file
    cannot be read or parsed, ToolchainError when no libdevice is installed.
    """
    names = tuple(names)
    path = find_libdevice()
    with _LOCK:
        fkey = _file_key(path)
        key = (fkey, names, triple, data_layout)
        cached = _subsets.get(key)
        if cached is not None:
            mod = _parse_bitcode(cached, f"subset of {path}", context)
            mod.triple, mod.data_layout = triple, data_layout
            return mod
        data, sha = _read(fkey)
        dkey = _disk_key(sha, names, triple, data_layout)
        stored = _from_disk(dkey, names, context)
        if stored is None:
            mod, subset = _cut(data, sha, fkey, names, triple, data_layout, new_pass_builder, context)
            disk_put("libdevice", "EGGPU_LIBDEVICE_CACHE", dkey, ".bc", subset, KEEP)
        else:
            mod, subset = stored
            mod.triple, mod.data_layout = triple, data_layout
        if len(_subsets) >= MAX_SUBSETS:
            del _subsets[next(iter(_subsets))]
        _subsets[key] = subset
        return mod


def _cut(data: bytes, sha: str, fkey: tuple[str, int, int], names: tuple[str, ...], triple: str,
         data_layout: str, new_pass_builder: Callable[[], Any], context) -> tuple[llvm_binding.ModuleRef, bytes]:
    """The subset of libdevice (``data``, its ``sha``) for ``names``, parsed into ``context``, and
    its bitcode. Cut from the math cut (:func:`_math_cut`) when it holds the names; else from the
    whole file: this thread's background parse of the same bytes when there is one
    (:mod:`.libdevice_prefetch`: cut in the parse's own context, then the subset's bitcode parsed
    into ``context``, as an in-process hit does), or a parse into ``context`` here."""
    from .emitter import LIBDEVICE_FUNCTIONS

    if set(names) <= set(LIBDEVICE_FUNCTIONS):
        math = _math_cut(data, sha, fkey, new_pass_builder, context)
        if math is not None and all(_defines(math[0], n) for n in names):
            return _finish(*math, names, triple, data_layout, new_pass_builder, context, f"subset of {fkey[0]}")
        if math is not None:
            _close(*math)
    return _cut_from_whole(data, fkey, names, triple, data_layout, new_pass_builder, context)


def _close(mod: llvm_binding.ModuleRef, own_context) -> None:
    mod.close()  # the module before its context (disposing a context frees its modules)
    if own_context is not None:
        own_context.close()


def _finish(mod: llvm_binding.ModuleRef, own_context, names: tuple[str, ...], triple: str, data_layout: str,
            new_pass_builder: Callable[[], Any], context, what: str) -> tuple[llvm_binding.ModuleRef, bytes]:
    """Cut ``mod`` (libdevice or its math cut) down to ``names`` (:func:`_strip_checked`): the
    subset in ``context`` and its bitcode. ``own_context``: None when ``mod`` was parsed into
    ``context`` (it is then the subset); else the context of a background parse
    (:mod:`.libdevice_prefetch`), closed with ``mod`` here, the subset's bitcode parsed into
    ``context`` (the path of an in-process hit, so the linked module is the same)."""
    if own_context is None:
        _strip_checked(mod, names, triple, data_layout, new_pass_builder)
        return mod, mod.as_bitcode()
    try:
        _strip_checked(mod, names, triple, data_layout, new_pass_builder)
        subset = mod.as_bitcode()
    finally:
        _close(mod, own_context)
    out = _parse_bitcode(subset, what, context)
    out.triple, out.data_layout = triple, data_layout
    return out, subset


def _math_key(sha: str) -> str:
    import llvmlite.binding as llvm

    from .emitter import LIBDEVICE_FUNCTIONS

    version = ".".join(map(str, llvm.llvm_version_info))
    text = "\0".join((f"libdevice-math-{FORMAT}", sha, version, *LIBDEVICE_FUNCTIONS))
    return hashlib.sha256(text.encode()).hexdigest()


def _math_cut(data: bytes, sha: str, fkey: tuple[str, int, int], new_pass_builder: Callable[[], Any],
              context) -> tuple[llvm_binding.ModuleRef, Any] | None:
    """libdevice cut to the functions the lowering can call (``emitter.LIBDEVICE_FUNCTIONS``:
    ~107 KB of its ~465 KB, parsed 4-5x faster), as ``(module, own context)``: this thread's
    background parse of the stored cut when there is one (:mod:`.libdevice_prefetch`: the
    module in a context of its own, which the caller closes after it), else parsed into
    ``context`` here (own context None).

    Kept on disk per installation (``toolchain/<sha256>.bc``, keyed by :data:`FORMAT`,
    libdevice's sha256, LLVM's version and the names: a fact about the toolchain, beside the
    ptxas version), so a compile needing a new set of functions parses this instead of all of
    libdevice. Cut from the whole file (and stored) when it is missing or unreadable. None when
    the disk layer is off (``EGGPU_LIBDEVICE_CACHE=0``): the subset is then cut from the whole file."""
    if os.environ.get("EGGPU_LIBDEVICE_CACHE", "1") == "0":
        return None
    from .libdevice_prefetch import take

    key = _math_key(sha)
    stored = disk_get("toolchain", "EGGPU_LIBDEVICE_CACHE", key, ".bc")
    if stored is not None:
        pre = take(math_slot(key), stored)
        if pre is not None:
            return pre
        try:
            return _parse_bitcode(stored, key, context), None
        except CodegenError:
            pass  # not bitcode: cut again and replace it
    from .emitter import LIBDEVICE_FUNCTIONS

    pre = take(fkey, data)
    whole, own_context = pre if pre is not None else (_parse_bitcode(data, fkey[0], context), None)
    try:
        strip_to(whole, [n for n in LIBDEVICE_FUNCTIONS if _defines(whole, n)], new_pass_builder())
        cut = whole.as_bitcode()
    finally:
        _close(whole, own_context)
    disk_put("toolchain", "EGGPU_LIBDEVICE_CACHE", key, ".bc", cut, KEEP_MATH)
    return _parse_bitcode(cut, key, context), None


def math_slot(key: str) -> tuple[str, str]:
    """What a background parse of the math cut stored under ``key`` is filed under
    (:func:`.libdevice_prefetch.take`; a whole-file parse is filed under the file's key)."""
    return ("libdevice math cut", key)


def stored_math_cut() -> tuple[tuple[str, str], bytes] | None:
    """``(math_slot(key), bitcode)`` of the math cut stored for the installed libdevice, or None
    when there is none or the disk layer is off (:mod:`.libdevice_prefetch` then parses the whole
    file instead). ToolchainError/CodegenError as :func:`file_key`."""
    if os.environ.get("EGGPU_LIBDEVICE_CACHE", "1") == "0":
        return None
    with _LOCK:
        _, sha = _read(_file_key(find_libdevice()))
    key = _math_key(sha)
    data = disk_get("toolchain", "EGGPU_LIBDEVICE_CACHE", key, ".bc")
    return None if data is None else (math_slot(key), data)


def math_cut_stored() -> bool:
    """Whether the math cut of the installed libdevice is on disk (see :func:`stored_math_cut`)."""
    return stored_math_cut() is not None


def _cut_from_whole(data: bytes, fkey: tuple[str, int, int], names: tuple[str, ...], triple: str,
                    data_layout: str, new_pass_builder: Callable[[], Any], context
                    ) -> tuple[llvm_binding.ModuleRef, bytes]:
    """:func:`_cut` from the whole of libdevice (prefetched or parsed here)."""
    from .libdevice_prefetch import take

    pre = take(fkey, data)
    mod, own_context = pre if pre is not None else (_parse_bitcode(data, fkey[0], context), None)
    return _finish(mod, own_context, names, triple, data_layout, new_pass_builder, context, f"subset of {fkey[0]}")


def _strip_checked(mod: llvm_binding.ModuleRef, names: tuple[str, ...], triple: str, data_layout: str,
                   new_pass_builder: Callable[[], Any]) -> None:
    """Cut libdevice's module ``mod`` down to ``names`` (:func:`strip_to`) with the kernel's triple
    and data layout; :class:`LibdeviceMissing` for names it does not define."""
    missing = [n for n in names if not _defines(mod, n)]
    if missing:
        raise LibdeviceMissing(missing)
    mod.triple, mod.data_layout = triple, data_layout
    strip_to(mod, names, new_pass_builder())
