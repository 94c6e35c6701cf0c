from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from my_graph import Doc, builder
from serde_kit import Serializer

# InMemorySaver serializes too: a value that would not survive a database fails here, in tests.
graph = builder.compile(checkpointer=InMemorySaver(serde=Serializer(allow=[Doc])))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
