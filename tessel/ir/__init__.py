"""The IR: scalar expressions, loop statements, buffers and the tools that walk them."""

from .dtype import DType, dtype, promote
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CommReducer,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    IterVar,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Node,
    Not,
    Or,
    PrimExpr,
    ProducerLoad,
    Ramp,
    Range,
    Reduce,
    Select,
    StringImm,
    Sub,
    Var,
)
from .functor import (
    Mutator,
    StructKey,
    Visitor,
    collect,
    free_vars,
    ir_transform,
    post_order_visit,
    structural_equal,
    structural_hash,
    substitute,
)
from .op import cast, const, convert
from .printer import to_text
from .serialize import load_json, save_json
from .stmt import (
    Allocate,
    AttrStmt,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    ProducerRealize,
    ProducerStore,
    SeqStmt,
    Stmt,
    seq,
)

__all__ = [n for n in dir() if not n.startswith("_")]
