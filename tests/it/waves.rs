//! Integration tests of this area (filled by its issue).
