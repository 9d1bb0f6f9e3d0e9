"""windowkeeper.cli"""
