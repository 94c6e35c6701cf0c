"""Tests of serde_kit.ext (the ext families: stdlib, pydantic, numpy, langchain, langgraph, user types)."""
