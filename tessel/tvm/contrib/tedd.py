"""``tvm.contrib.tedd``: TVM's Tensor Expression Debug Display, drawn by :mod:`tessel.viz`.

The three views of seed 001 (dataflow graph, schedule tree, IterVar relationship graph) under
TVM's function names and arguments: ``dot_file_path`` writes the DOT text,
``output_dot_string=True`` returns it, ``show_svg=True`` displays the SVG in a notebook.
"""

from __future__ import annotations

from pathlib import Path

from ... import viz
from ...errors import ViewError
from .._names import missing_names


def _out(view, show_svg: bool, dot_file_path: str, output_dot_string: bool) -> str | None:
    if dot_file_path:
        Path(dot_file_path).write_text(view.to_dot())
    if show_svg:
        try:
            from IPython.display import SVG, display
        except ImportError:
            raise ViewError("tedd: show_svg=True displays in a notebook and needs IPython; pass "
                            "dot_file_path= (DOT) or use tessel.viz's view.save('x.svg')") from None
        display(SVG(view.to_svg()))
    return view.to_dot() if output_dot_string else None


def viz_dataflow_graph(sch, show_svg: bool = False, dot_file_path: str = "", output_dot_string: bool = False):
    return _out(viz.dataflow_graph(sch), show_svg, dot_file_path, output_dot_string)


def viz_schedule_tree(sch, show_svg: bool = False, dot_file_path: str = "", output_dot_string: bool = False):
    return _out(viz.schedule_tree(sch), show_svg, dot_file_path, output_dot_string)


def viz_itervar_relationship_graph(sch, show_svg: bool = False, dot_file_path: str = "",
                                   output_dot_string: bool = False):
    return _out(viz.itervar_graph(sch), show_svg, dot_file_path, output_dot_string)


__getattr__ = missing_names(__name__)
