"""Stage 2: the patch files, their store on disk, the lock file, maintainer edits."""
