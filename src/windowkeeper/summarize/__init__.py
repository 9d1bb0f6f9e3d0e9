"""windowkeeper.summarize"""
