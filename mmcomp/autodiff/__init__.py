"""Differentiation of fusions: `mmcomp.grad(fusion)` gives the forward to run (saving what
the backward needs) and the backward as fusions, one per kernel (docs/autodiff.md)."""

from mmcomp.autodiff.chain import chain
from mmcomp.autodiff.plan import COLUMN_SUM, KERNEL, POINTWISE, Gradient, Runner, Step
from mmcomp.autodiff.rules import RULES
from mmcomp.autodiff.run import KernelCache, NumpyRunner, run_backward, run_forward
from mmcomp.autodiff.transform import grad

__all__ = [
    "COLUMN_SUM",
    "KERNEL",
    "POINTWISE",
    "RULES",
    "Gradient",
    "KernelCache",
    "NumpyRunner",
    "Runner",
    "Step",
    "chain",
    "grad",
    "run_backward",
    "run_forward",
]
