"""The markdown catalog and the drift checks between it, the code and the outputs."""
