"""The ``eggpu`` command line (DESIGN.md §7): demo, compile, rules check, rules synthesize, explain.

User mistakes (bad file, unknown kernel, bad option, a kernel that does not compile) print one
``eggpu: error: ...`` line on stderr and exit with status 1 (2 for command-line usage errors and
for rule files that cannot be loaded); no traceback. A closed stdout (``eggpu explain ... | head``)
ends the command quietly with status 141 (128 + SIGPIPE, as shell tools do).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eggpu.ir.errors import EggpuError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool killed by a closed pipe


class UsageError(EggpuError):
    """A command-line mistake (exit status 2)."""


class CliError(EggpuError):
    """A command failed for a reason outside the kernel (e.g. the output file; exit status 1)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here when the output was buffered
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except UsageError as e:
        print(f"eggpu: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except EggpuError as e:
        print(f"eggpu: error: {e}", file=sys.stderr)
        return EXIT_FAIL
    except KeyboardInterrupt:
        print("eggpu: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again (and print
    "Exception ignored ... BrokenPipeError") after the reader went away."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def positive_int(text: str) -> int:
    """argparse type: an integer > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="eggpu", description="Compile Triton-style kernels with verified rewrites.")
    sub = p.add_subparsers(dest="command")

    d = sub.add_parser("demo", help="compile, optimize, verify and CPU-run the bundled kernels")
    d.add_argument("--target", default="sm_90")
    d.add_argument("--no-opt", action="store_true", help="skip the optimizer")
    d.add_argument("--kernels", help="comma-separated library kernel names (default: all)")
    d.add_argument("--no-cache", action="store_true", help="compile from scratch (ignore the cache)")
    d.set_defaults(func=cmd_demo)

    c = sub.add_parser("compile", help="compile FILE.py::NAME to PTX, LLVM IR or tensor IR")
    _kernel_args(c)
    c.add_argument("--emit", choices=("ptx", "llvm", "ir"), default="ptx")
    c.add_argument("-o", "--output", help="write here instead of stdout (- is stdout)")
    c.add_argument("--debug", action="store_true", default=None,
                   help="keep tl.device_assert checks (Triton's debug; default: TRITON_DEBUG)")
    c.set_defaults(func=cmd_compile)

    r = sub.add_parser("rules", help="rewrite-rule tools")
    rsub = r.add_subparsers(dest="rules_command")
    rc = rsub.add_parser("check", help="prove every rule with z3; print verdicts and counterexamples")
    rc.add_argument("files", nargs="*", help="rule files (default: the shipped rules)")
    rc.add_argument("--timeout-ms", type=positive_int, default=None, help="z3 budget per rule and dtype")
    rc.add_argument("--no-cache", action="store_true", help="ignore the proof cache")
    rc.add_argument("--json", action="store_true", help="print the verdicts as one JSON document")
    rc.add_argument("--per-dtype", action="store_true",
                    help="one row per rule and dtype: verdict, seconds, how it was decided")
    rc.set_defaults(func=cmd_rules_check)
    rs = rsub.add_parser("synthesize", help="enumerate, fingerprint and prove new rules; write them as an .egg file")
    rs.add_argument("--out", required=True, help="the .egg file to write")
    rs.add_argument("--max-size", type=positive_int, default=5, help="largest term, in nodes (default 5)")
    rs.add_argument("--time-limit", type=positive_float, default=600.0, help="seconds for the whole run (default 600)")
    rs.add_argument("--dtypes", default="i32,f32", help="comma-separated dtypes to enumerate (default i32,f32)")
    rs.add_argument("--vars", type=positive_int, default=2, help="variables per term (1-3, default 2)")
    rs.add_argument("--proof-ms", type=positive_int, default=None, help="z3 budget per candidate")
    rs.set_defaults(func=cmd_rules_synthesize)
    r.set_defaults(func=lambda a: (r.print_help(), EXIT_USAGE)[1])

    e = sub.add_parser("explain", help="show the IR before/after optimization and the rules that fired")
    _kernel_args(e)
    e.set_defaults(func=cmd_explain)
    return p


def _kernel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="FILE.py::NAME", help="kernel function in a Python file")
    p.add_argument("--dtype", action="append", default=[], help="dtype for each dtype parameter, in order")
    p.add_argument("-c", "--const", action="append", default=[], metavar="NAME=VALUE", help="constexpr value")
    p.add_argument("--target", default="sm_90")
    p.add_argument("--num-warps", type=int, default=4)
    p.add_argument("--num-stages", type=int, default=None,
                   help="cp.async stages of a tensor-core K loop (1: none; default: 3, fewer if they do not fit)")
    p.add_argument("--dot-strategy", default=None, choices=("shared_fma", "mma_sync", "wgmma"),
                   help="the strategy every tl.dot must use (default: automatic; wgmma: sm_90a, opt-in)")
    p.add_argument("--no-opt", action="store_true")
    p.add_argument("--fast-math", action="store_true")
    p.add_argument("--rules", action="append", default=[], help="extra rule file(s)")


# ------------------------------------------------------------------ loading kernels


def load_kernel_function(spec: str) -> Any:
    """The @kernel function named by ``FILE.py::NAME``."""
    file, _, name = spec.rpartition("::")
    if not file or not name:
        raise UsageError(f"expected FILE.py::NAME, got {spec!r}")
    path = Path(file)
    if not path.is_file():
        raise UsageError(_not_a_file(path))
    mod_name = f"_eggpu_cli_{path.stem}"
    spec_ = importlib.util.spec_from_file_location(mod_name, path)
    if spec_ is None or spec_.loader is None:
        raise UsageError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec_)
    sys.modules[mod_name] = module
    try:
        spec_.loader.exec_module(module)
    except EggpuError:
        raise
    except SystemExit as e:  # the module called sys.exit() (or exit()) while being imported
        raise UsageError(f"importing {file} failed: it called sys.exit({e.code!r})") from None
    except Exception as e:  # the user's module failed to import: one line, no traceback
        raise UsageError(f"importing {file} failed: {type(e).__name__}: {e}") from None
    obj = getattr(module, name, None)
    if obj is None:
        kernels = sorted(k for k, v in vars(module).items() if hasattr(v, "Kernel"))
        raise UsageError(f"{file} has no kernel named {name!r} (kernels: {', '.join(kernels) or 'none'})")
    if not hasattr(obj, "Kernel"):
        if type(obj).__name__ == "JITFunction":  # untyped: its types come from the launch arguments
            raise UsageError(f"{file}::{name} is an @eggpu.jit function: its parameter types come from the "
                             f"arguments of a launch ({name}[grid](*args) in Python); the command line compiles "
                             f"@eggpu.kernel functions, whose parameters are typed")
        raise UsageError(f"{file}::{name} is not an @eggpu.kernel function")
    return obj


def _not_a_file(path: Path) -> str:
    """Why ``path`` (not a regular file) cannot be a kernel file: it is missing, a directory, or
    something else (a device or FIFO is never opened: reading it could block or never end)."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return f"no such file: {path}"
    if stat.S_ISDIR(mode):
        return f"{path} is a directory; name a Python file in it (FILE.py::NAME)"
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    return f"{path} is {kind}, not a Python file (only regular files are read)"


def parse_const(text: str) -> tuple[str, Any]:
    name, eq, raw = text.partition("=")
    if not eq or not name.strip():
        raise UsageError(f"constexpr must be NAME=VALUE, got {text!r}")
    low = raw.strip().lower()
    if low in ("true", "false"):
        return name.strip(), low == "true"
    for conv in (int, float):
        try:
            return name.strip(), conv(raw)
        except ValueError:
            pass
    from eggpu.ir.dtypes import BY_NAME

    if raw in BY_NAME:
        return name.strip(), BY_NAME[raw]
    raise UsageError(f"constexpr {name}: cannot parse value {raw!r} (int, float, true/false or a dtype)")


def parse_consts(consts: Sequence[str]) -> dict[str, Any]:
    """``-c NAME=VALUE`` options -> {name: value}; a name given twice (names are matched without
    regard to case, as the kernel's parameters are) is a UsageError naming it."""
    named: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for text in consts:
        name, value = parse_const(text)
        key = name.lower()
        if key in spelled:
            raise UsageError(f"constexpr {name} is given twice (-c {spelled[key]} and -c {text})")
        spelled[key] = text
        named[name] = value
    return named


def make_instance(fn: Any, dtypes: Sequence[str], consts: Sequence[str]) -> Any:
    cls = fn.Kernel
    named = parse_consts(consts)
    if dtypes:
        from eggpu.ir.dtypes import parse_dtype

        try:
            dts = tuple(parse_dtype(d) for d in dtypes)
        except EggpuError as e:
            raise UsageError(str(e)) from None
        cls = cls[dts if len(dts) > 1 else dts[0]]
    return cls(**{k.lower(): v for k, v in named.items()})


def _instance_from_args(a: argparse.Namespace) -> Any:
    return make_instance(load_kernel_function(a.spec), a.dtype, a.const)


# ------------------------------------------------------------------ commands


def cmd_compile(a: argparse.Namespace) -> int:
    from eggpu.pipeline import compile as eggpu_compile

    if a.output is not None and not a.output.strip():  # checked before the (slow) compile
        raise UsageError(f"-o needs a file name, got {a.output!r} (leave -o out, or write -o -, for stdout)")
    inst = _instance_from_args(a)
    ck = eggpu_compile(inst, a.target, optimize=not a.no_opt, fast_math=a.fast_math, num_warps=a.num_warps,
                       rules=a.rules, num_stages=a.num_stages, dot_strategy=a.dot_strategy, debug=a.debug)
    text = {"ptx": ck.ptx, "llvm": ck.llvm_ir, "ir": ck.ir_text}[a.emit]
    if a.output not in (None, "-"):
        try:
            Path(a.output).write_text(text)
        except OSError as e:
            raise CliError(f"cannot write {a.output}: {e.strerror or e}") from None
        print(f"wrote {a.emit} of {ck.id} for {ck.target} to {a.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_explain(a: argparse.Namespace) -> int:
    from eggpu.optimizer import optimize

    _check_target(a.target)
    inst = _instance_from_args(a)
    before = inst.ir()
    res = optimize(before, rules=a.rules, fast_math=a.fast_math, target=a.target)
    print(f"# {inst.id} for {a.target}\n")
    print("## IR before optimization\n")
    print(before)
    print("## IR after optimization\n")
    print(res.function)
    print("## Rules fired\n")
    for name, count in sorted(res.rule_hits.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count:5d}  {name}")
    if not res.rule_hits:
        print("  (none)")
    print(f"\ncost {res.cost_before} -> {res.cost_after}; stop reason: {getattr(res.stop_reason, 'name', res.stop_reason)}; "
          f"e-graph nodes: {res.egraph_nodes}; validation: {getattr(res.validation, 'verdict', res.validation)}")
    return EXIT_OK


def _check_target(target: str) -> None:
    """The same error for an unknown target as ``eggpu compile`` gives."""
    from eggpu.codegen.target import get_target

    get_target(target)


def cmd_rules_check(a: argparse.Namespace) -> int:
    from eggpu.ir.errors import RuleError
    from eggpu.optimizer.rules_cli import EXIT_LOAD_ERROR, check_rules

    try:
        return check_rules(a.files, out=sys.stdout, timeout_ms=a.timeout_ms, use_cache=not a.no_cache,
                           raise_load_errors=True, as_json=a.json, per_dtype=a.per_dtype)
    except RuleError as e:  # one "eggpu: error:" line per problem, on stderr
        print("\n".join(f"eggpu: error: {line}" for line in str(e).splitlines()), file=sys.stderr)
        return EXIT_LOAD_ERROR


def cmd_rules_synthesize(a: argparse.Namespace) -> int:
    from eggpu.optimizer.rules_cli import SynthesizeArgError, synthesize_rules

    command = "eggpu rules synthesize " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in (("out", a.out), ("max_size", a.max_size), ("time_limit", a.time_limit),
                                                    ("dtypes", a.dtypes), ("vars", a.vars)))
    try:
        return synthesize_rules(a.out, max_size=a.max_size, time_limit=a.time_limit, dtypes=a.dtypes, n_vars=a.vars,
                                proof_ms=a.proof_ms, command=command)
    except SynthesizeArgError as e:
        raise UsageError(str(e)) from None


def cmd_demo(a: argparse.Namespace) -> int:
    from eggpu.demo import run_demo

    _check_target(a.target)  # one error line, not a failed row per kernel
    names = [n.strip() for n in a.kernels.split(",")] if a.kernels else None
    return run_demo(target=a.target, optimize=not a.no_opt, names=names, use_cache=not a.no_cache)


def progress(message: str) -> None:
    """One progress line on stderr (long work: many rules, many kernels)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
