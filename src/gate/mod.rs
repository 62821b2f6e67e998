//! The stop gate: placeholder, filled by the stop-gate issue.
