import sqlite3

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
conn = sqlite3.connect("checkpoints.db", check_same_thread=False)
# Once `serde-kit status` shows 0 unbound rows: an unbound row (one a database writer
# made, or one from before bind_rows) is refused too. KMS-wrapped keys:
# load_keyring(kms=AwsKms("arn:aws:kms:...")), AwsKms from serde_kit.crypto.
saver = bind_rows(SqliteSaver(conn, serde=serde), require_bound=True)
graph = builder.compile(checkpointer=saver)
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
print(graph.get_state(config).values["docs"])
