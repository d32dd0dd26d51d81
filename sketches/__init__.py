"""Sketch templates for Z3 repair (affine index, floor-div/mod, bound, guard, stride)."""
