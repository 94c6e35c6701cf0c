import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

# Keys from SERDE_KIT_KEYRING="k1:<base64>" or SERDE_KIT_KEYRING_FILE=/path (mode 0600).
serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())

conn = sqlite3.connect("checkpoints.db", check_same_thread=False)
# bind_rows: each encrypted row opens only on its own thread (copied onto another, it is refused).
graph = builder.compile(checkpointer=bind_rows(SqliteSaver(conn, serde=serde)))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
