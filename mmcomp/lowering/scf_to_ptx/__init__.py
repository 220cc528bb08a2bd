"""The rewrite patterns of `convert-scf-to-ptx` (control_flow: scf as labels and branches)."""
