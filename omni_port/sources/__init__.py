"""The I/O edge: reading and writing text, locating upstream sources, the configuration."""
