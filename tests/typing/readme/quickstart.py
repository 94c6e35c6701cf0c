import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder  # your graph, and the types its state holds (in a module of their own)
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())  # key: $SERDE_KIT_KEYRING
saver = bind_rows(SqliteSaver(sqlite3.connect("app.db", check_same_thread=False), serde=serde))
graph = builder.compile(checkpointer=saver)
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
print(graph.get_state(config).values["docs"])  # [Doc(title='a.txt', ...), Doc(title='b.txt', ...)]
