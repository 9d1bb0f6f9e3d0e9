"""windowkeeper.llm.formats"""
