# my_graph.py: a small graph whose state holds your own types
from typing import TypedDict

from langgraph.graph import START, StateGraph

from my_types import Doc


class State(TypedDict):
    docs: list[Doc]


def add_doc(state: State) -> State:
    return {"docs": [*state["docs"], Doc("b.txt", 200)]}


builder = StateGraph(State)
builder.add_node("add_doc", add_doc)
builder.add_edge(START, "add_doc")
graph = builder.compile()  # for langgraph.json; the server adds its checkpointer
