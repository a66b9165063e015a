"""Frontend: a kernel's Python source to workgroup-level XeGPU IR."""
from .generator import compile_to_ir
from .semantic import SemanticError

__all__ = ["compile_to_ir", "SemanticError"]
