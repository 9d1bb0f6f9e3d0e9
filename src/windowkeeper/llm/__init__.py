"""windowkeeper.llm"""
