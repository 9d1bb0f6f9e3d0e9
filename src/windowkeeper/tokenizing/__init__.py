"""Token accounting, split by job; import the public names from `windowkeeper.tokens`."""
