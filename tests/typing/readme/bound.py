import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
conn = sqlite3.connect("checkpoints.db", check_same_thread=False)
# Every encrypted row is bound to its thread: copied onto another thread, it is refused.
# PostgresSaver: bind_rows(PostgresSaver(conn, serde=serde), seal_inline=True) also seals
# the values it keeps inline. KMS-wrapped keys: load_keyring(kms=AwsKms("arn:aws:kms:...")).
graph = builder.compile(checkpointer=bind_rows(SqliteSaver(conn, serde=serde)))
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
print(graph.get_state(config).values["docs"])
