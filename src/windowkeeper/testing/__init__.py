"""Importable test helpers: fake provider HTTP servers, the storage conformance suite, sample conversation files,
and the seeded generators of test data (coding-agent sessions, two-person dialogues).

They ship with the library so a third-party backend or a host application can run the same checks windowkeeper's
own suite runs (the fake servers speak each provider's wire format to the official SDKs), and the demo, the
benchmarks and the tests replay the same generated sessions.
"""
