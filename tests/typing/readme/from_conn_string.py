from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())

with SqliteSaver.from_conn_string("checkpoints.db") as saver:
    saver.serde = serde  # from_conn_string takes no serde=: set it before first use (and bind_rows)
    graph = builder.compile(checkpointer=bind_rows(saver))
    config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
    graph.invoke({"docs": [Doc("a.txt", 100)]}, config)
