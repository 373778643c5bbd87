"""Stage 4: static verification of generated runner modules."""
