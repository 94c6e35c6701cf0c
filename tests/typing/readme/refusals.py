from collections import Counter

from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener

refused: Counter[tuple[str, str, str]] = Counter()  # (kind, module, name) -> how many times


def count(event: SerdeEvent) -> None:
    if event["kind"] in ("msgpack_blocked", "msgpack_method_blocked"):
        refused[(event["kind"], event["module"], event["name"])] += 1


unregister = register_serde_event_listener(count)  # serde_kit and the stock serializer both report here
