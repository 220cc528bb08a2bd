"""numpy interpreters: the ground truth on machines without a GPU."""
