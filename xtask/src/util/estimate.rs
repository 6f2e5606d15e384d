//! How far a long command is, from how the last run of the same command went: the times at
//! which its status changed (for a glibc build, the subdirectory make entered) are recorded
//! when it succeeds, and the next run places itself on that timeline: a percentage and the
//! time left.
//!
//! The runs of a build tree are not all alike: a cold build takes minutes, the second flavour
//! of the same tree seconds, with the same subdirectories in the same order. So the estimate
//! is by pace: when this run reaches a status the last run reached at `t` s, and this run is
//! at `now` s, the whole of it should take `total * now / t`. Before any status matches, the
//! pace is taken as the last run's.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::util::durable;

/// A recorded run: each status change, in order, with the seconds since the start, and the
/// seconds the whole run took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timeline {
    pub marks: Vec<(String, f64)>,
    pub total: f64,
}

/// Statuses reached this early in the recorded run say nothing about the pace (a cold tree
/// and a built one both enter the first subdirectories at once).
const PACE_FROM_SECS: f64 = 5.0;

/// A timeline with no marks (or a run that took no time) gives no estimate.
impl Timeline {
    /// Reads a timeline written by [`Timeline::render`]; `None` for a missing or unreadable
    /// file (an estimate is a convenience, never a reason to fail a build).
    pub(crate) fn read(path: &Path) -> Option<Timeline> {
        Timeline::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// `<seconds> <status>` per line, then `total <seconds>`.
    pub(crate) fn parse(text: &str) -> Option<Timeline> {
        let mut marks = Vec::new();
        let mut total = None;
        for line in text.lines() {
            let (first, rest) = line.split_once(' ')?;
            if first == "total" {
                total = Some(rest.parse().ok()?);
            } else {
                marks.push((rest.to_string(), first.parse().ok()?));
            }
        }
        let total: f64 = total?;
        (total > 0.0).then_some(Timeline { marks, total })
    }

    pub(crate) fn render(&self) -> String {
        let mut text = String::new();
        for (status, at) in &self.marks {
            text.push_str(&format!("{at:.1} {status}\n"));
        }
        text.push_str(&format!("total {:.1}\n", self.total));
        text
    }

    /// Writes it to `path` whole (a crash leaves the old one or this one).
    pub(crate) fn write(&self, path: &Path) -> Result<()> {
        durable::replace_file(path, self.render().as_bytes())
            .with_context(|| format!("cannot record the run's times in {}", path.display()))
    }
}

/// Where a run is on the last run's timeline.
#[derive(Debug)]
pub(crate) struct Tracker {
    last: Option<Timeline>,
    /// The index in `last` of the latest status matched.
    at: Option<usize>,
    /// This run's pace against the last one (2.0: twice as slow), from the latest match.
    pace: f64,
    /// This run's own marks, to record when it succeeds.
    now: Vec<(String, f64)>,
}

/// How far a run is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    pub percent: u32,
    pub left: Duration,
}

impl std::fmt::Display for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.left.as_secs();
        write!(
            f,
            "{}%, about {}:{:02} left",
            self.percent,
            secs / 60,
            secs % 60
        )
    }
}

/// How many recorded marks a status change may skip to find its match: make's parallel jobs
/// interleave their subdirectories, and a name far ahead is another pass, not this one.
const LOOK_AHEAD: usize = 64;

impl Tracker {
    pub(crate) fn new(last: Option<Timeline>) -> Tracker {
        Tracker {
            last,
            at: None,
            pace: 1.0,
            now: Vec::new(),
        }
    }

    /// This run's status changed to `status`, `elapsed` s after its start.
    pub(crate) fn status(&mut self, status: &str, elapsed: f64) {
        if self.now.last().is_some_and(|(s, _)| s == status) {
            return;
        }
        self.now.push((status.to_string(), elapsed));
        let Some(last) = &self.last else {
            return;
        };
        let from = self.at.map_or(0, |i| i + 1);
        let found = last.marks[from.min(last.marks.len())..]
            .iter()
            .take(LOOK_AHEAD)
            .position(|(s, _)| s == status)
            .map(|i| from + i);
        if let Some(i) = found {
            self.at = Some(i);
            let recorded = last.marks[i].1;
            if recorded >= PACE_FROM_SECS {
                self.pace = elapsed / recorded;
            }
        }
    }

    /// The estimate `elapsed` s into the run; `None` without a recorded run.
    pub(crate) fn estimate(&self, elapsed: f64) -> Option<Estimate> {
        let last = self.last.as_ref()?;
        let expected = last.total * self.pace;
        // A run slower than its estimate is not done: it stays below 100% and says so.
        let percent = ((elapsed / expected) * 100.0).clamp(0.0, 99.0) as u32;
        let left = (expected - elapsed).max(0.0);
        Some(Estimate {
            percent,
            left: Duration::from_secs_f64(left),
        })
    }

    /// This run's timeline, once it finished `total` s after its start.
    pub(crate) fn finished(self, total: f64) -> Timeline {
        Timeline {
            marks: self.now,
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold_build() -> Timeline {
        Timeline {
            marks: vec![
                ("csu".into(), 0.5),
                ("iconv".into(), 60.0),
                ("elf".into(), 200.0),
                ("nptl".into(), 300.0),
                ("elf".into(), 380.0),
            ],
            total: 400.0,
        }
    }

    fn at(tracker: &Tracker, elapsed: f64) -> (u32, u64) {
        let e = tracker.estimate(elapsed).unwrap();
        (e.percent, e.left.as_secs())
    }

    #[test]
    fn a_run_at_the_recorded_pace_gets_the_recorded_times() {
        let mut t = Tracker::new(Some(cold_build()));
        t.status("csu", 0.4);
        assert_eq!(at(&t, 0.4), (0, 399));
        t.status("elf", 200.0);
        assert_eq!(at(&t, 200.0), (50, 200));
        assert_eq!(at(&t, 250.0), (62, 150));
        assert_eq!(
            t.estimate(200.0).unwrap().to_string(),
            "50%, about 3:20 left"
        );
    }

    #[test]
    fn a_faster_run_of_the_same_tree_is_estimated_at_its_own_pace() {
        // The second flavour of a built tree: the same subdirectories, a tenth of the time.
        let mut t = Tracker::new(Some(cold_build()));
        t.status("csu", 0.1);
        t.status("iconv", 6.0);
        assert_eq!(at(&t, 6.0), (15, 34));
        t.status("elf", 20.0);
        t.status("nptl", 30.0);
        assert_eq!(at(&t, 30.0), (75, 10));
    }

    #[test]
    fn a_name_seen_twice_is_matched_in_order_and_a_late_run_stays_below_100() {
        let mut t = Tracker::new(Some(cold_build()));
        t.status("elf", 200.0);
        t.status("nptl", 300.0);
        t.status("elf", 380.0);
        assert_eq!(at(&t, 380.0), (95, 20));
        assert_eq!(at(&t, 500.0), (99, 0));
    }

    #[test]
    fn without_a_recorded_run_there_is_no_estimate() {
        let mut t = Tracker::new(None);
        t.status("csu", 1.0);
        assert!(t.estimate(1.0).is_none());
        assert_eq!(
            t.finished(2.0),
            Timeline {
                marks: vec![("csu".into(), 1.0)],
                total: 2.0
            }
        );
    }

    #[test]
    fn a_timeline_reads_back_what_it_wrote_and_refuses_garbage() {
        let timeline = cold_build();
        assert_eq!(Timeline::parse(&timeline.render()), Some(timeline));
        assert_eq!(Timeline::parse("12 elf\n"), None, "no total");
        assert_eq!(Timeline::parse("x elf\ntotal 3\n"), None);
        assert_eq!(Timeline::parse("total 0\n"), None);
    }
}
