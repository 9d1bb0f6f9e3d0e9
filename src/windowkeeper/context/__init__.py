"""windowkeeper.context"""
