"""Reference import path shim: ``windowkeeper.utils.constants``."""
