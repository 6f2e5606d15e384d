//! Mail `Date:` headers (RFC 2822) as `git format-patch` writes them, without a date crate.

use anyhow::{bail, Context, Result};
use git2::Time;

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// RFC 2822, in the author's own offset, as git prints it.
pub(crate) fn format(time: Time) -> String {
    let offset = i64::from(time.offset_minutes());
    let local = time.seconds() + offset * 60;
    let days = local.div_euclid(86400);
    let secs = local.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    let sign = if offset < 0 { '-' } else { '+' };
    format!(
        "{}, {d} {} {y} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        offset.abs() / 60,
        offset.abs() % 60
    )
}

/// `2026-11-30 14:05 UTC`: when a report was made.
pub(crate) fn utc_minutes(seconds_since_epoch: i64) -> String {
    let (y, m, d) = civil_from_days(seconds_since_epoch.div_euclid(86400));
    let secs = seconds_since_epoch.rem_euclid(86400);
    format!(
        "{y}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60
    )
}

/// The seconds since the epoch of a [`utc_minutes`] text.
pub(crate) fn parse_utc_minutes(text: &str) -> Result<i64> {
    let bad = || format!("`{text}` is not a time like `2026-11-30 14:05 UTC`");
    let Some((date, time)) = text
        .strip_suffix(" UTC")
        .and_then(|rest| rest.split_once(' '))
    else {
        bail!(bad())
    };
    let numbers = |text: &str, sep: char| -> Option<Vec<i64>> {
        text.split(sep).map(|n| n.parse().ok()).collect()
    };
    let (Some([y, m, d]), Some([h, min])) = (
        numbers(date, '-').and_then(|v| <[i64; 3]>::try_from(v).ok()),
        numbers(time, ':').and_then(|v| <[i64; 2]>::try_from(v).ok()),
    ) else {
        bail!(bad())
    };
    if !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || !(0..24).contains(&h)
        || !(0..60).contains(&min)
    {
        bail!(bad())
    }
    Ok(days_from_civil(y, m, d) * 86400 + h * 3600 + min * 60)
}

pub(crate) fn parse(text: &str) -> Result<Time> {
    let bad = || format!("Date: `{text}` is not like `Mon, 17 Sep 2001 00:00:00 +0000`");
    let words: Vec<&str> = text.split_whitespace().collect();
    let [_, d, mon, y, hms, zone] = words.as_slice() else {
        bail!(bad())
    };
    let d: i64 = d.parse().with_context(bad)?;
    let m = MONTHS.iter().position(|x| x == mon).with_context(bad)? as i64 + 1;
    let y: i64 = y.parse().with_context(bad)?;
    let hms: Vec<i64> = hms
        .split(':')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(bad)?;
    let [h, min, s] = hms.as_slice() else {
        bail!(bad())
    };
    let sign = match zone.as_bytes().first() {
        Some(b'+') => 1,
        Some(b'-') => -1,
        _ => bail!(bad()),
    };
    let zone: i64 = zone[1..].parse().with_context(bad)?;
    let offset = sign * (zone / 100 * 60 + zone % 100);
    let local = days_from_civil(y, m, d) * 86400 + h * 3600 + min * 60 + s;
    Ok(Time::new(local - offset * 60, offset as i32))
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_dates_are_utc_minutes() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minutes(1_796_045_045), "2026-11-30 13:24 UTC");
        assert_eq!(
            parse_utc_minutes("2026-11-30 13:24 UTC").unwrap(),
            1_796_045_045 - 5
        );
        for bad in [
            "2026-11-30 13:24",
            "2026-13-30 13:24 UTC",
            "yesterday UTC",
            "",
        ] {
            assert!(parse_utc_minutes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dates_round_trip_in_the_authors_offset() {
        for (secs, offset) in [
            (0, 0),
            (1_764_491_400, 60),
            (951_782_400, -330),
            (4_102_444_800, 0),
        ] {
            let time = Time::new(secs, offset);
            let text = format(time);
            let back = parse(&text).unwrap();
            assert_eq!(
                (back.seconds(), back.offset_minutes()),
                (secs, offset),
                "{text}"
            );
        }
        assert_eq!(format(Time::new(0, 0)), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(
            format(Time::new(951_782_400, 0)),
            "Tue, 29 Feb 2000 00:00:00 +0000"
        );
    }
}
