"""Proposers (DESIGN §5): who suggests the next program for a pass — the symbolic rewrite, the LLM, or both.

``protocol`` fixes the interface (Candidate, Proposer, PassContext); ``llm_proposer`` asks a
backend from :mod:`xpiler.llm` with the pass's meta-prompt; ``policy`` implements
``--proposer {symbolic,llm,both}``; ``screen`` holds the defensive answer checks.
"""
from .protocol import PASSES, Candidate, FunctionProposer, PassContext, Proposer, program_text

__all__ = ["PASSES", "Candidate", "FunctionProposer", "PassContext", "Proposer", "program_text"]
