//! Calls over time as a bar chart: the bars' geometry is computed here, and
//! the template writes it out as inline SVG (no script, no charting library).

use std::collections::BTreeMap;

use serde::Serialize;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 160.0;
/// More buckets than this and the bars are too thin: buckets are days instead of hours.
const MAX_HOURS: i64 = 72;

/// One bar.
#[derive(Debug, Serialize, PartialEq)]
pub struct Bar {
    pub x: String,
    pub y: String,
    pub width: String,
    pub height: String,
    pub label: String,
    pub count: u64,
}

/// The chart: bars, the bucket size in words, the largest bucket.
#[derive(Debug, Serialize, PartialEq)]
pub struct Chart {
    pub width: f64,
    pub height: f64,
    pub bucket: &'static str,
    pub max: u64,
    pub bars: Vec<Bar>,
    pub first: String,
    pub last: String,
}

impl Chart {
    /// Counts of `times` (microseconds, UTC) per hour, or per day when
    /// they span more than three days; empty buckets in between are kept.
    pub fn of(times: &[i64]) -> Self {
        let (Some(&min), Some(&max)) = (times.iter().min(), times.iter().max()) else {
            return Self {
                width: WIDTH,
                height: HEIGHT,
                bucket: "hour",
                max: 0,
                bars: Vec::new(),
                first: String::new(),
                last: String::new(),
            };
        };
        const HOUR: i64 = 3_600_000_000;
        let hours = max.div_euclid(HOUR) - min.div_euclid(HOUR) + 1;
        let (size, bucket, format) = if hours <= MAX_HOURS {
            (HOUR, "hour", "%Y-%m-%d %H:00")
        } else {
            (24 * HOUR, "day", "%Y-%m-%d")
        };
        let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
        for t in times {
            *counts.entry(t.div_euclid(size)).or_default() += 1;
        }
        let start = min.div_euclid(size);
        let end = max.div_euclid(size);
        let n = (end - start + 1) as f64;
        let top = counts.values().copied().max().unwrap_or(1).max(1);
        let slot = WIDTH / n;
        let label = |b: i64| {
            chrono::DateTime::from_timestamp_micros(b * size)
                .map(|t| t.format(format).to_string())
                .unwrap_or_default()
        };
        let bars = (start..=end)
            .map(|b| {
                let count = counts.get(&b).copied().unwrap_or(0);
                let h = HEIGHT * count as f64 / top as f64;
                Bar {
                    x: format!("{:.2}", (b - start) as f64 * slot),
                    y: format!("{:.2}", HEIGHT - h),
                    width: format!("{:.2}", (slot * 0.9).clamp(0.5, 40.0)),
                    height: format!("{h:.2}"),
                    label: label(b),
                    count,
                }
            })
            .collect();
        Self {
            width: WIDTH,
            height: HEIGHT,
            bucket,
            max: top,
            bars,
            first: label(start),
            last: label(end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_with_no_calls_keep_an_empty_bar() {
        let hour = 3_600_000_000;
        let chart = Chart::of(&[0, 1, 2 * hour]);
        assert_eq!(chart.bucket, "hour");
        let counts: Vec<u64> = chart.bars.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 0, 1]);
        assert_eq!(chart.max, 2);
    }

    #[test]
    fn a_long_span_is_counted_by_day() {
        let day = 24 * 3_600_000_000;
        let chart = Chart::of(&[0, 10 * day]);
        assert_eq!(chart.bucket, "day");
        assert_eq!(chart.bars.len(), 11);
    }
}
