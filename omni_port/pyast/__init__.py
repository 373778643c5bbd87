"""Python source as data: statement trees, keys, alignment, data flow, names, package sources."""
