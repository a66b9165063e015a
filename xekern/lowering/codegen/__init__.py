"""Codegen: lane-level IR to LLVM IR, one rule table per op class and target family."""
