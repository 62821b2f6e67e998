//! Stripe ids and proposals: placeholder, filled by the stripes issue.
