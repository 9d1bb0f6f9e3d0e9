"""windowkeeper.graph"""
