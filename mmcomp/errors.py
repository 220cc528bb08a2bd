"""The exceptions mmcomp raises to its users."""

from __future__ import annotations


class FusionError(ValueError):
    """A fusion is malformed: a shape, dtype or argument does not fit the op that uses it."""


class ScheduleError(ValueError):
    """A schedule parameter is invalid or breaks a hardware limit."""


class LaunchError(RuntimeError):
    """A kernel cannot be launched: no suitable GPU, or arguments that do not fit."""


class CudaError(RuntimeError):
    """A CUDA driver call failed; carries the driver's error name and what was being done."""

    def __init__(self, what: str, error_name: str, detail: str = ""):
        self.what = what
        self.error_name = error_name
        message = f"CUDA error {error_name} while {what}"
        if detail:
            message += f": {detail}"
        super().__init__(message)
