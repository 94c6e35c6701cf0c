import asyncio

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows


async def main() -> None:
    serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
    async with aiosqlite.connect("checkpoints.db") as conn:
        graph = builder.compile(checkpointer=bind_rows(AsyncSqliteSaver(conn, serde=serde)))
        config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
        await graph.ainvoke({"docs": [Doc("a.txt", 100)]}, config)
        print((await graph.aget_state(config)).values["docs"])


asyncio.run(main())
