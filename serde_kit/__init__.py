"""serde_kit: safe, exact, fast serialization and operable encryption for LangGraph savers."""
