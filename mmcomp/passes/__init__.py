"""One module per pass, each an xDSL `ModulePass` registered in `mmcomp.ir.registry`."""
