"""windowkeeper.memory"""
