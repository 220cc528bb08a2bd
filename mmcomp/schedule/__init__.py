"""The schedule model: the heuristic, the M buckets of a dynamic M, the spill refit."""
