# checkpointer.py, next to langgraph.json
import contextlib
import os
from collections.abc import AsyncIterator

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from my_types import Doc
from serde_kit import EncryptedSerializer, Serializer, load_keyring
from serde_kit.bound_saver import BoundSaver, bind_rows


@contextlib.asynccontextmanager
async def make_checkpointer() -> AsyncIterator[BoundSaver[str]]:
    serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())
    async with AsyncPostgresSaver.from_conn_string(os.environ["DATABASE_URL"], serde=serde) as saver:
        await saver.setup()  # creates or migrates the tables
        # Rows bound to their thread; the values PostgreSQL keeps inline are encrypted too.
        yield bind_rows(saver, seal_inline=True)
