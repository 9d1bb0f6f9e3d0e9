"""Re-exports under the import paths the reference documentation uses (``windowkeeper.core.state``, ``.graph``)."""
