"""windowkeeper.testing"""
