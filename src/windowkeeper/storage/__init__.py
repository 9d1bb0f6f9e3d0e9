"""windowkeeper.storage"""
