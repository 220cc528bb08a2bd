"""Supporting code of the lowering passes in `mmcomp.passes`, one package per target."""
