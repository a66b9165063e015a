"""Developer tools that look at what xekern produces (``isa``: SPIR-V -> Intel GPU ISA, offline)."""
