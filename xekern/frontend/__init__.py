"""Frontend: a kernel's Python source to workgroup-level XeGPU IR."""
from .compile import compile_to_ir
from .semantic import SemanticError

__all__ = ["compile_to_ir", "SemanticError"]
