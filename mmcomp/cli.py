"""`mmcomp-opt`: xDSL's opt driver with mmcomp's dialects, passes and targets."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.xdsl_opt_main import xDSLOptMain

from mmcomp.registry import DIALECTS, PASSES, TARGETS


class MmcompOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus mmcomp's, all loaded lazily."""

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
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    try:
        MmcompOptMain(description="mmcomp modular optimizer driver", args=args).run()
    except (ParseError, VerifyException, DiagnosticException) as error:
        print(error, file=sys.stderr)
        sys.exit(1)
    except (ValueError, OSError) as error:
        print(f"mmcomp-opt: error: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
