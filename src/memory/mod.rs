//! Guard memories: placeholder, filled by the widening-scan issue.
