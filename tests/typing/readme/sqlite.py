import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import Serializer

conn = sqlite3.connect("checkpoints.db", check_same_thread=False)
saver = SqliteSaver(conn, serde=Serializer(allow=[Doc]))
graph = builder.compile(checkpointer=saver)

config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
print(graph.get_state(config).values["docs"])  # [Doc(title='a.txt', ...), Doc(title='b.txt', ...)]
