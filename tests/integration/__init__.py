"""End-to-end tests: real LangGraph savers and graphs over serde_kit."""
