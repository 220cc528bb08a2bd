"""Source locations in diagnostics: `file:line:col: error: message`, as MLIR prints them.

xDSL's parser keeps an op's location only when the text writes one (`loc(...)`).
`LocatingParser` gives every other parsed op the position of its name in the source, as
a `FileLineColLoc`; `verify` then reports a verifier error at the op that failed, and
`at(op, message)` prefixes any message with the op's location. Ops built from Python
have no source position, and their messages stay as they are. Locations are not printed
with the IR (xDSL prints them only with debug info), so the IR text does not change.

    module = LocatingParser(ctx, text, "fusion.mlir").parse_module()
    verify(module)  # VerifyException("fusion.mlir:3:8: error: fusion.linear: ...")

An input with no operation, or whose braces do not balance, is refused by `LocatingParser`
with a ParseError that says which (at the unclosed `{` or the unmatched `}`), where xDSL
says "Could not parse entire input!".
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind


class LocatingParser(Parser):
    """xDSL's parser; each op parsed without a written location gets that of its name."""

    def __init__(
        self, ctx: Context, text: str | bytes, name: str = "<unknown>", line_offset: int = 0
    ):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        """Lines before the text in its file (a chunk of --split-input-file)."""
        self._names: list[Span[str] | Span[bytes]] = []

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """xDSL's parse_module; an empty or unbalanced input gets an error naming that."""
        try:
            return super().parse_module(allow_implicit_module)
        except ParseError as error:
            source: Input[str] = self.lexer.input
            at_end = not source.content[error.span.start :].strip()
            if not at_end and "Could not parse entire input" not in error.msg:
                raise
            raise structure_error(source) or error from None

    def _parse_op_result_list(self):  # pyright: ignore[reportIncompatibleMethodOverride]
        results = super()._parse_op_result_list()
        self._names.append(self._current_token.span)
        return results

    def parse_operation(self) -> Operation:
        depth = len(self._names)
        op = super().parse_operation()
        name = self._names[depth] if len(self._names) > depth else None
        del self._names[depth:]
        if name is not None and isinstance(op.location, UnknownLoc):
            position = name.get_location()
            op.location = FileLineColLoc(
                StringAttr(position.file),
                IntAttr(position.line + self.line_offset),
                IntAttr(int(position.col)),
            )
        return op


def structure_error(source: Input[str]) -> ParseError | None:
    """A ParseError for an input that holds no token, a `}` that closes nothing, or a `{`
    never closed (the last one opened); None where the braces balance."""
    lexer = MLIRLexer(source)
    opened: list[Span[str]] = []
    count = 0
    try:
        while (token := lexer.lex()).kind is not MLIRTokenKind.EOF:
            count += 1
            if token.kind is MLIRTokenKind.L_BRACE:
                opened.append(token.span)
            elif token.kind is MLIRTokenKind.R_BRACE and not opened:
                return ParseError(
                    token.span,
                    "unmatched '}': no region is open here (a '{' is missing before it, or "
                    "this '}' is one too many)",
                )
            elif token.kind is MLIRTokenKind.R_BRACE:
                opened.pop()
    except ParseError:
        return None  # a token the lexer refuses: xDSL's own message says where
    if count == 0:
        return ParseError(
            token.span,
            "the input holds no operation: expected a func.func (or a builtin.module holding one)",
        )
    if opened:
        return ParseError(
            opened[-1],
            "this '{' is never closed: the input ends where its '}' was expected "
            f"({len(opened)} region{'s' if len(opened) > 1 else ''} still open)",
        )
    return None


def location(op: Operation) -> str | None:
    """`file:line:col` of an op parsed from text, or None."""
    loc = op.location
    if not isinstance(loc, FileLineColLoc):
        return None
    return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"


def at(op: Operation, message: str) -> str:
    """`message` as a diagnostic at `op`: `file:line:col: error: message` where it has a
    source location; the message itself otherwise (and when it already carries one)."""
    where = location(op)
    if where is None or message.startswith(f"{where}: "):
        return message
    return f"{where}: error: {message}"


_LOCATED = re.compile(r"^[^\s:][^:]*:\d+:\d+: error: ")


def is_located(message: str) -> bool:
    """Whether `message` starts with a location (`file:line:col: error: `)."""
    return _LOCATED.match(message) is not None


def _post_order(op: Operation) -> Iterator[Operation]:
    """Ops nested in `op`, then `op`: the order in which xDSL verifies them."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                yield from _post_order(child)
    yield op


def failing_op(module: Operation) -> tuple[Operation, VerifyException] | None:
    """The first op whose own verification fails, in xDSL's order, and its error."""
    for op in _post_order(module):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            return op, error
    return None


def verify(module: ModuleOp) -> None:
    """Verify `module`; a VerifyException names the failing op's source location."""
    try:
        module.verify()
    except VerifyException as error:
        raise located(module, error) from None


def located(module: Operation, error: VerifyException) -> VerifyException:
    """`error`, raised while verifying `module`, at the location of the op that failed."""
    found = failing_op(module)
    if found is None:
        return error
    op, own = found
    message = at(op, str(own))
    if message == str(error):
        return error
    result = VerifyException(message)
    for note in getattr(error, "__notes__", ()):
        result.add_note(note)
    return result


def stage_message(stage: str, error: Exception) -> str:
    """The message of an error raised in `stage`, prefixed with the stage's name unless it
    already starts with it or with a source location."""
    message = str(error)
    if message.startswith(f"{stage}:") or is_located(message):
        return message
    return f"{stage}: {message}"
