from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from my_graph import builder
from my_types import Doc
from serde_kit import Serializer

# InMemorySaver serializes too: a value that would not survive a database fails here, in tests.
graph = builder.compile(checkpointer=InMemorySaver(serde=Serializer(allow=[Doc])))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
