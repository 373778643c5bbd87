"""Stage 1: runner modules to anchored pieces (markers, blocks, base detection)."""
