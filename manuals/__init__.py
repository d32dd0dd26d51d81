"""Target manuals in our own words (markdown, one short section per file), read by retrieval."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent
