"""Golden vectors: bytes written by the real langgraph-checkpoint, read by serde_kit forever."""
