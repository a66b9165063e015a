"""xekern's IR: XeGPU-level ops on tiles that carry layouts (seeds 000/001), plus the
arith/math/vector/scf/gpu ops they need. ``print_func`` gives the stable text form, ``parse_func``
reads it back."""
from .core import Block, Builder, IRError, Loc, Op, Value, blocks, users
from .layout import Layout, LayoutError, SliceLayout
from .ops_arith import BinaryOp, CastOp, CmpOp, ConstantOp, FmaOp, InlineAsmOp, SelectOp, UnaryOp, cast_kind
from .ops_debug import AssertOp, BreakpointOp, PrintOp
from .ops_iree_gpu import ShuffleTensorOp, ValueBarrierOp
from .ops_private import AllocPrivateOp, PrivateLoadOp, PrivateStoreOp
from .ops_gpu import (BarrierOp, BlockIdOp, GridDimOp, IdTileOp, LaneIdOp, NumSubgroupsOp, ShuffleOp, SubgroupIdOp,
                      SubgroupReduceOp, TileGatherOp, TileShuffleOp)
from .ops_scf import ConditionOp, ForOp, FuncOp, IfOp, ReturnOp, WhileOp, YieldOp
from .ops_vector import (BroadcastOp, ConvertLayoutOp, ExtractOp, FromElementsOp, ReduceOp,
                         ShapeCastOp, SlotShuffleOp, StepOp, TransposeOp)
from .ops_xegpu import (AddPtrOp, MemDescViewOp, PtrCastOp, AllocNBarrierOp, AtomicRMWOp, CompileHintOp, CreateMemDescOp, CreateNdTDescOp,
                        CreateTDescOp, DpasOp, FenceOp, InitNBarrierOp, LoadGatherOp, LoadMatrixOp, LoadNdOp,
                        NBarrierArriveOp, NBarrierWaitOp, PrefetchNdOp, PrefetchOp, StoreMatrixOp, StoreNdOp,
                        StoreScatterOp, UpdateNdOffsetOp, UpdateOffsetOp)
from .parser import ParseError, parse_func
from .printer import print_func
from .types import (DType, MemDescType, NBarrierType, PointerType, PrivateArrayType, TensorDescType, Type, VectorType,
                    elem_of, shape_of)
from .verifier import verify_func
