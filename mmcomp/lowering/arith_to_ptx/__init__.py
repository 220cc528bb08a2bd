"""The rewrite patterns of `convert-arith-to-ptx`, one module per family of values.

    registers   the registers the patterns read through casts; tables and tests they share
    index       index arithmetic and predicates -> 32-bit unsigned ptx instructions
    wide        the 64-bit address sums (arith on i64) -> mul.wide / mad.wide / add.u64
    float_math  the epilogue's f32 arith and math -> one f32 instruction each

`mmcomp.passes.convert_arith_to_ptx` applies them and checks what is left.
"""
