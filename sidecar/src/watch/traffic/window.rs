//! Rates over the last minutes, from the running tallies of successive readings.
//!
//! Each successful reading leaves a [`Point`]: when (seconds on a monotonic clock) and every
//! target's [`Tally`]. A rate over a window of `W` seconds compares the newest point with the newest
//! point at least `W` seconds older, or, while the history is shorter than that, with the oldest
//! one: the window a rate says it covers (`window_seconds`) is what the points really span. The
//! history keeps just enough points for the longest window.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::counters::{Tally, Target};

/// One reading's tallies.
#[derive(Debug, Clone)]
pub struct Point {
    /// When, in seconds on a monotonic clock.
    pub at: f64,
    /// Each target's running tally then.
    pub tallies: BTreeMap<Target, Tally>,
}

/// Requests per second and the share of them answered with a 5xx, over a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Requests per second.
    pub requests_per_second: f64,
    /// 5xx answers per second.
    pub errors_per_second: f64,
    /// 5xx answers over requests, from 0 to 1; `None` without a request in the window.
    pub error_rate: Option<f64>,
    /// The seconds the rate covers.
    pub window_seconds: f64,
}

/// The points of the last minutes, oldest first.
#[derive(Debug, Default)]
pub struct History {
    points: VecDeque<Point>,
}

impl History {
    /// Adds the newest point, and drops the points no window of up to `longest` seconds needs.
    pub fn push(&mut self, point: Point, longest: f64) {
        self.points.push_back(point);
        while self.points.len() > 2
            && self
                .points
                .get(1)
                .is_some_and(|second| self.newest_at() - second.at >= longest)
        {
            self.points.pop_front();
        }
    }

    /// The newest point.
    pub fn newest(&self) -> Option<&Point> {
        self.points.back()
    }

    /// Forgets `target` at every point.
    pub fn forget(&mut self, target: &Target) {
        for point in &mut self.points {
            point.tallies.remove(target);
        }
    }

    /// Whether `target`'s tally moved within the history (or it is not in every point).
    pub fn moved(&self, target: &Target) -> bool {
        let mut tallies = self.points.iter().map(|p| p.tallies.get(target));
        let first = tallies.next().flatten();
        first.is_none() || tallies.any(|t| t != first)
    }

    /// `target`'s rate over the last `window` seconds; `None` before there are two points.
    pub fn rate(&self, target: &Target, window: f64) -> Option<Rate> {
        let (base, newest) = self.span(window)?;
        let tally = |point: &Point| point.tallies.get(target).copied().unwrap_or_default();
        Some(rate(tally(base), tally(newest), newest.at - base.at))
    }

    /// Every target's requests together over the last `window` seconds.
    pub fn total(&self, window: f64) -> Option<Rate> {
        let (base, newest) = self.span(window)?;
        let sum = |point: &Point| {
            point.tallies.values().fold(Tally::default(), |sum, t| Tally {
                requests: sum.requests + t.requests,
                errors: sum.errors + t.errors,
            })
        };
        Some(rate(sum(base), sum(newest), newest.at - base.at))
    }

    /// The points a rate over `window` compares: the newest point at least `window` seconds before
    /// the newest, else the oldest; `None` with fewer than two points.
    fn span(&self, window: f64) -> Option<(&Point, &Point)> {
        let newest = self.points.back()?;
        let older = self.points.iter().take(self.points.len().saturating_sub(1));
        let base = (older.clone().rev())
            .find(|p| newest.at - p.at >= window)
            .or_else(|| older.clone().next())?;
        (newest.at > base.at).then_some((base, newest))
    }

    fn newest_at(&self) -> f64 {
        self.points.back().map_or(0.0, |p| p.at)
    }
}

/// The rate between two tallies `seconds` apart (`seconds` > 0).
fn rate(before: Tally, after: Tally, seconds: f64) -> Rate {
    // Tallies only grow; a target forgotten and seen again starts over, never below nothing.
    let requests = (after.requests - before.requests).max(0.0);
    let errors = (after.errors - before.errors).max(0.0);
    Rate {
        requests_per_second: requests / seconds,
        errors_per_second: errors / seconds,
        error_rate: (requests > 0.0).then(|| (errors / requests).min(1.0)),
        window_seconds: seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONGEST: f64 = 300.0;

    fn api() -> Target {
        Target::Resource {
            kind: "Ingress".into(),
            namespace: "shop".into(),
            name: "api".into(),
        }
    }

    /// Readings every 10 s in which `api` gets `per_reading` requests, `errors` of them 5xx.
    fn history(readings: usize, per_reading: f64, errors: f64) -> History {
        let mut history = History::default();
        for i in 0..readings {
            let n = i as f64;
            let tallies = BTreeMap::from([(
                api(),
                Tally {
                    requests: n * per_reading,
                    errors: n * errors,
                },
            )]);
            history.push(Point { at: 10.0 * n, tallies }, LONGEST);
        }
        history
    }

    #[test]
    fn no_rate_from_one_reading() {
        let history = history(1, 10.0, 0.0);
        assert_eq!(history.rate(&api(), 60.0), None);
        assert_eq!(history.total(60.0), None);
    }

    #[test]
    fn a_rate_covers_what_the_history_has_until_it_covers_the_window() {
        // Two readings 10 s apart: the minute's rate is over those 10 s.
        let rate = history(2, 50.0, 5.0).rate(&api(), 60.0).unwrap();
        assert_eq!(rate.window_seconds, 10.0);
        assert_eq!(rate.requests_per_second, 5.0);
        assert_eq!(rate.errors_per_second, 0.5);
        assert_eq!(rate.error_rate, Some(0.1));
        // Twenty readings (190 s): the minute's rate is over 60 s, the five minutes' over 190 s.
        let long = history(20, 50.0, 5.0);
        assert_eq!(long.rate(&api(), 60.0).unwrap().window_seconds, 60.0);
        assert_eq!(long.rate(&api(), 300.0).unwrap().window_seconds, 190.0);
    }

    #[test]
    fn a_rate_is_over_the_last_window_only() {
        let mut history = history(10, 0.0, 0.0);
        // Quiet for 90 s, then 120 requests in the last 10 s, all 5xx.
        let tallies = BTreeMap::from([(
            api(),
            Tally {
                requests: 120.0,
                errors: 120.0,
            },
        )]);
        history.push(Point { at: 100.0, tallies }, LONGEST);
        let minute = history.rate(&api(), 60.0).unwrap();
        assert_eq!((minute.window_seconds, minute.requests_per_second), (60.0, 2.0));
        assert_eq!(minute.error_rate, Some(1.0));
        let five = history.rate(&api(), 300.0).unwrap();
        assert_eq!((five.window_seconds, five.requests_per_second), (100.0, 1.2));
    }

    #[test]
    fn no_error_rate_without_requests() {
        let rate = history(3, 0.0, 0.0).rate(&api(), 60.0).unwrap();
        assert_eq!(rate.requests_per_second, 0.0);
        assert_eq!(rate.error_rate, None);
    }

    #[test]
    fn a_target_missing_from_the_older_point_counted_from_nothing() {
        let mut history = history(2, 0.0, 0.0);
        let newcomer = Target::Folded;
        let mut tallies = history.newest().unwrap().tallies.clone();
        tallies.insert(
            newcomer.clone(),
            Tally {
                requests: 40.0,
                errors: 0.0,
            },
        );
        history.push(Point { at: 20.0, tallies }, LONGEST);
        let rate = history.rate(&newcomer, 60.0).unwrap();
        assert_eq!((rate.window_seconds, rate.requests_per_second), (20.0, 2.0));
        assert_eq!(history.total(60.0).unwrap().requests_per_second, 2.0);
    }

    #[test]
    fn the_history_keeps_one_point_at_least_the_longest_window_old_and_no_more() {
        let history = history(100, 1.0, 0.0);
        let oldest = history.points.front().unwrap().at;
        let newest = history.newest().unwrap().at;
        assert_eq!(newest - oldest, LONGEST);
        assert_eq!(history.points.len(), 31);
    }

    #[test]
    fn a_target_moved_while_its_tally_changed_within_the_history() {
        let mut history = history(3, 1.0, 0.0);
        assert!(history.moved(&api()));
        let last = history.newest().unwrap().clone();
        for at in [30.0, 40.0] {
            history.push(Point { at, ..last.clone() }, 15.0);
        }
        assert!(!history.moved(&api()));
        history.forget(&api());
        assert_eq!(history.rate(&api(), 60.0).unwrap().requests_per_second, 0.0);
    }
}
