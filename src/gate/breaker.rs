//! The external authority's circuit breaker: [`BREAKER_THRESHOLD`] consecutive
//! failures open it for [`BREAKER_OPEN_SECS`]; while open, the authority is not
//! called and every stop is allowed (`breaker_open`). When the open period ends one
//! trial call is let through: success closes the breaker, failure reopens it at once.

/// Consecutive failures that open the breaker: one failure is noise, three in a row
/// mean the authority is down and every stop would pay its timeout.
pub(crate) const BREAKER_THRESHOLD: u32 = 3;
/// How long an open breaker stays open: long enough to stop paying a 2 s timeout on
/// every stop, short enough that a repaired authority is used again soon.
pub(crate) const BREAKER_OPEN_SECS: i64 = 300;

/// Persisted breaker state (one row per authority command).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Breaker {
    pub consecutive_failures: u32,
    /// Unix seconds until which the breaker is open; kept after it passes so the
    /// next failure (the trial call's) reopens at once.
    pub open_until: Option<i64>,
}

impl Breaker {
    /// Whether a call may be made at `now` (unix seconds).
    pub(crate) fn admits(&self, now: i64) -> bool {
        self.open_until.is_none_or(|t| now >= t)
    }

    pub(crate) fn on_success(self) -> Breaker {
        Breaker::default()
    }

    pub(crate) fn on_failure(self, now: i64) -> Breaker {
        if self.open_until.is_some() {
            return Breaker { consecutive_failures: BREAKER_THRESHOLD, open_until: Some(now + BREAKER_OPEN_SECS) };
        }
        let n = self.consecutive_failures + 1;
        Breaker { consecutive_failures: n, open_until: (n >= BREAKER_THRESHOLD).then_some(now + BREAKER_OPEN_SECS) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_failures_open_for_five_minutes_then_one_trial() {
        let mut b = Breaker::default();
        for _ in 0..2 {
            b = b.on_failure(100);
            assert!(b.admits(100));
        }
        b = b.on_failure(100);
        assert!(!b.admits(100));
        assert!(!b.admits(100 + BREAKER_OPEN_SECS - 1));
        assert!(b.admits(100 + BREAKER_OPEN_SECS));
        let reopened = b.on_failure(500);
        assert!(!reopened.admits(501));
        assert_eq!(b.on_success(), Breaker::default());
    }

    #[test]
    fn a_success_resets_the_count() {
        let b = Breaker::default().on_failure(0).on_failure(0).on_success().on_failure(0);
        assert!(b.admits(0));
        assert_eq!(b.consecutive_failures, 1);
    }
}
