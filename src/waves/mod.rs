//! Fixer waves, carry and fence: placeholder, filled by the waves issue.
