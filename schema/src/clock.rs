//! What time it is, as one injected value. Production reads the system clock; tests use a
//! [`ShiftedClock`] and move it forward instead of sleeping until a period ends or a retry
//! falls due. Everything that decides by time (periods, retries, expiries, timestamps of
//! what is written) asks the clock it was given, never `Utc::now()` itself.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, TimeDelta, Utc};

pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> DateTime<Utc>;
}

/// The clock every part of one process shares.
pub type SharedClock = Arc<dyn Clock>;

/// The system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The system's clock moved ahead by an offset that only grows: time still passes on its
/// own, and `advance` jumps it forward (never back, so nothing sees time reverse).
#[derive(Debug, Default)]
pub struct ShiftedClock {
    ahead_micros: AtomicI64,
}

impl ShiftedClock {
    pub fn advance(&self, by: TimeDelta) {
        let micros = by.num_microseconds().unwrap_or(i64::MAX).max(0);
        self.ahead_micros.fetch_add(micros, Ordering::SeqCst);
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + TimeDelta::microseconds(self.ahead_micros.load(Ordering::SeqCst))
    }
}

/// The system clock, shared.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shifted_clock_moves_forward_by_what_it_is_advanced() {
        let clock = ShiftedClock::default();
        let before = clock.now();
        clock.advance(TimeDelta::hours(2));
        let after = clock.now();
        assert!(after - before >= TimeDelta::hours(2));
        assert!(after - before < TimeDelta::hours(2) + TimeDelta::seconds(5));
        clock.advance(TimeDelta::hours(-5));
        assert!(clock.now() >= after, "a clock never goes back");
    }
}
