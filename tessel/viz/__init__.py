"""Pictures of a schedule (seed 001's dataflow graph, schedule tree and IterVar-relation DAG)
and a step-by-step explorer of how a schedule was built.

DOT text is always available; SVG is drawn by Graphviz's ``dot`` when it is on PATH and by
tessel's own layout otherwise (``engine="python"`` forces the latter).
"""

from .dot import Graph
from .explorer import explorer
from .svg import to_svg
from .views import View, dataflow_graph, itervar_graph, schedule_tree

__all__ = ["Graph", "View", "dataflow_graph", "explorer", "itervar_graph", "schedule_tree", "to_svg"]
