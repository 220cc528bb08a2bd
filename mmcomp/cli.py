"""`mmcomp-opt`: xDSL's opt driver with mmcomp's dialects, passes and targets."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from mmcomp.registry import DIALECTS, PASSES, TARGETS


class MmcompOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus mmcomp's, all loaded lazily.

    MLIR text is parsed with source locations (mmcomp.diagnostics), so a verifier error
    reads `file:line:col: error: message`, at the op that failed.
    """

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if (self.args.frontend or file_extension) != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        from mmcomp.diagnostics import LocatingParser

        parser = LocatingParser(self.ctx, chunk.read(), self.get_input_name(), start_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def apply_passes(self, prog: ModuleOp):
        try:
            super().apply_passes(prog)
        except VerifyException as error:
            from mmcomp.diagnostics import located

            raise located(prog, error) from None

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
