import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

# While the migration runs: new rows are encrypted, old plaintext rows still load.
serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring(), allow_plaintext=True)
conn = sqlite3.connect("checkpoints.db", check_same_thread=False)
graph = builder.compile(checkpointer=bind_rows(SqliteSaver(conn, serde=serde)))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
print(graph.get_state(config).values["docs"])
