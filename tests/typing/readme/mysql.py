import asyncio
import os

import pymysql
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.mysql.aio import AIOMySQLSaver
from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows

DB_URI = os.environ["DATABASE_URL"]  # e.g. mysql://app:secret@db.internal:3306/app
serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}

# PyMySQLSaver needs autocommit=True on its connection: without it, the saver's reads
# stay in one open transaction and never see what other processes write.
with pymysql.connect(**PyMySQLSaver.parse_conn_string(DB_URI), autocommit=True) as conn:
    saver = PyMySQLSaver(conn, serde=serde)
    saver.setup()  # creates or migrates the tables; once per database is enough
    # Rows bound to their thread. (seal_inline is PostgreSQL-only: the None/str/int/float/bool
    # values the MySQL savers keep inline stay plaintext JSON; see "Which savers".)
    graph = builder.compile(checkpointer=bind_rows(saver))
    graph.invoke({"docs": [Doc("a.txt", 100)]}, config)

# PyMySQLSaver.from_conn_string sets autocommit itself but takes no serde=:
with PyMySQLSaver.from_conn_string(DB_URI) as saver:
    saver.serde = serde  # before bind_rows, which checks that the serde encrypts
    graph = builder.compile(checkpointer=bind_rows(saver))
    print(graph.get_state(config).values["docs"])


async def main() -> None:
    # AIOMySQLSaver.from_conn_string takes serde= (and sets autocommit=True too).
    async with AIOMySQLSaver.from_conn_string(DB_URI, serde=serde) as saver:
        graph = builder.compile(checkpointer=bind_rows(saver))
        other: RunnableConfig = {"configurable": {"thread_id": "t-2"}}
        await graph.ainvoke({"docs": [Doc("c.txt", 300)]}, other)
        print((await graph.aget_state(other)).values["docs"])


asyncio.run(main())
