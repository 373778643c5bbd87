"""Stage 3: place every block in a new upstream and build the runner modules."""
