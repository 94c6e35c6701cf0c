import asyncio
import os

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from my_graph import builder
from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import bind_rows


async def main() -> None:
    serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
    async with AsyncPostgresSaver.from_conn_string(os.environ["DATABASE_URL"], serde=serde) as saver:
        await saver.setup()
        graph = builder.compile(checkpointer=bind_rows(saver, seal_inline=True))
        config: RunnableConfig = {"configurable": {"thread_id": "t-1"}}
        await graph.ainvoke({"docs": [Doc("a.txt", 100)]}, config)
        print((await graph.aget_state(config)).values["docs"])


asyncio.run(main())
