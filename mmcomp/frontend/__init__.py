"""The Python API: the Fusion builder and the one check of array arguments."""
