"""`mmcomp-opt`: xDSL's opt driver with mmcomp's dialects, passes and targets."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from types import NoneType, UnionType
from typing import IO, TYPE_CHECKING, Union, get_args, get_origin, get_type_hints

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from mmcomp.ir.registry import DIALECTS, PASSES, TARGETS

if TYPE_CHECKING:
    from xdsl.passes import ModulePass


class MmcompOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus mmcomp's, all loaded lazily.

    MLIR text is parsed with source locations (mmcomp.ir.diagnostics), so a verifier error
    reads `file:line:col: error: message`, at the op that failed.
    """

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if (self.args.frontend or file_extension) != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        from mmcomp.ir.diagnostics import LocatingParser

        parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name(), start_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def apply_passes(self, prog: ModuleOp):
        try:
            super().apply_passes(prog)
        except VerifyException as error:
            from mmcomp.ir.diagnostics import located

            raise located(prog, error) from None

    def setup_pipeline(self):
        """xDSL's pipeline set-up; an unknown pass gets the nearest names and mmcomp's passes,
        a pass option of the wrong type names the pass and option."""
        from xdsl.utils.arg_spec import parse_pipeline

        for spec in parse_pipeline(self.args.passes) if self.args.passes else ():
            if spec.name not in self.available_passes:
                raise ValueError(_unknown_pass(spec.name, self.available_passes))
        try:
            super().setup_pipeline()
        except ValueError as error:
            if not str(error).startswith("Incompatible types"):
                raise
            raise ValueError(
                _option_error(self.available_passes, self.args.passes, error)
            ) from None

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        super().register_all_targets()
        for name, factory in TARGETS.items():
            self.available_targets[name] = factory


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of the `mmcomp-opt` console script."""
    from xdsl.utils.exceptions import (
        ArgSpecParseError,
        DiagnosticException,
        ParseError,
        VerifyException,
    )

    try:
        MmcompOptMain(description="mmcomp modular optimizer driver", args=args).run()
    except (ParseError, VerifyException, DiagnosticException) as error:
        print(error, file=sys.stderr)
        sys.exit(1)
    except (ValueError, OSError) as error:
        print(f"mmcomp-opt: error: {error}", file=sys.stderr)
        sys.exit(1)
    except ArgSpecParseError as error:
        print(f"mmcomp-opt: {error}{_pipeline_hint(str(error))}", file=sys.stderr)
        sys.exit(1)


def _unknown_pass(name: str, available: Mapping[str, object]) -> str:
    """The message for a pass name that is not registered: the nearest registered names
    (difflib) and the list of mmcomp's passes."""
    import difflib

    near = difflib.get_close_matches(name, list(available), n=3, cutoff=0.75)
    guess = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return (
        f"unknown pass {name!r}{guess}\nmmcomp's passes: {', '.join(PASSES)}\n"
        f"(xDSL's own {len(available) - len(PASSES)} passes are registered too: "
        "mmcomp-opt --help lists every pass)"
    )


def _option_error(
    passes: Mapping[str, Callable[[], type[ModulePass]]], pipeline: str, error: ValueError
) -> str:
    """The message for a pass option of the wrong type, naming the pass, the option, the
    type expected and the value found (each option of the pipeline is tried alone to find
    the one refused); xDSL's own message where none is refused alone."""
    from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

    for spec in parse_pipeline(pipeline):
        factory = passes.get(spec.name)
        if factory is None:
            continue
        pass_type = factory()
        hints = get_type_hints(pass_type)
        for option, values in spec.parameters.items():
            try:
                pass_type.from_pass_spec(ArgSpec(spec.name, {option: values}))
            except ValueError:
                expected = _type_text(hints.get(option.replace("-", "_")))
                found = ",".join(_value_text(value) for value in values) or "no value"
                return f"{spec.name}: option {option}: expected {expected}, found {found}"
    return str(error)


def _type_text(hint: object) -> str:
    """A pass option's type as a message says it: `int`, `bool or str` (None left out)."""
    members = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    names = [
        member.__name__ if isinstance(member, type) and get_origin(member) is None else str(member)
        for member in members
        if member is not NoneType
    ]
    return " or ".join(names)


def _value_text(value: object) -> str:
    """An option value as the pipeline writes it: a string quoted, a bool in lower case."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _pipeline_hint(message: str) -> str:
    """A hint for a pass pipeline that xDSL's parser refused: quoting an option value that
    holds a character outside a word (a `/`, a leading `-`)."""
    lines = message.splitlines()
    written = [
        lines[n + 1] for n, line in enumerate(lines[:-1]) if line.startswith("pass-pipeline:")
    ]
    if not written or not any(mark in written[0] for mark in ("/", "=-")):
        return ""
    return (
        "\nhint: quote an option value that holds such a character, e.g. "
        'registers="40/232" (or registers=40,232)'
    )


if __name__ == "__main__":
    main()
