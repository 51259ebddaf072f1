"""Maintenance: repair after a crash, backup and restore, the invariant checks, export
and import, and the progress line long commands show."""
