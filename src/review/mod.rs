//! Review routing and seam detection: placeholder, filled by the review issue.
