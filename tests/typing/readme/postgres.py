import os

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import Connection
from psycopg.rows import DictRow, dict_row

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

DB_URI = os.environ["DATABASE_URL"]  # e.g. postgresql://app@db.internal:5432/app
serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())

# PostgresSaver needs autocommit=True and row_factory=dict_row on its connection
# (Connection[DictRow] tells type checkers which rows it returns).
with Connection[DictRow].connect(DB_URI, autocommit=True, row_factory=dict_row) as conn:
    saver = PostgresSaver(conn, serde=serde)
    saver.setup()  # creates or migrates the tables; once per database is enough
    # Rows bound to their thread; seal_inline: the values PostgreSQL keeps inline are encrypted too.
    graph = builder.compile(checkpointer=bind_rows(saver, seal_inline=True))
    config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
    graph.invoke({"docs": [Doc("a.txt", 100)]}, config)

# PostgresSaver.from_conn_string sets up that connection itself but takes no serde=:
with PostgresSaver.from_conn_string(DB_URI) as saver:
    saver.serde = serde  # before bind_rows, which checks that the serde encrypts
    graph = builder.compile(checkpointer=bind_rows(saver, seal_inline=True))
    print(graph.get_state(config).values["docs"])
