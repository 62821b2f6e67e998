//! Agent instruction files and hook installation: placeholder, filled by the install issue.
