use super::*;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

#[test]
fn the_window_is_thirty_days_or_since_the_agent_first_reported() {
    let now = t("2026-12-06T16:42:10.5Z");
    assert_eq!(window_end(now), t("2026-12-06T16:40:10Z"));
    assert_eq!(window(now, None), None);
    let old = window(now, Some((t("2026-01-01T00:00:00Z"), 3600))).expect("window");
    assert_eq!(old.start, t("2026-11-06T16:40:10Z"));
    assert_eq!(old.end, t("2026-12-06T16:40:10Z"));
    assert_eq!(old.seconds(), 30 * 86_400);
    // First covered hour 10:00 with 1,800 s: the agent reported from 10:30.
    let new = window(now, Some((t("2026-12-06T10:00:00Z"), 1800))).expect("window");
    assert_eq!(new.start, t("2026-12-06T10:30:00Z"));
    assert_eq!(new.seconds(), 6 * 3600 + 10 * 60 + 10);
    assert_eq!(new.overlap(t("2026-12-06T09:00:00Z"), None), new.seconds());
    assert_eq!(
        new.overlap(t("2026-12-06T16:30:00Z"), Some(t("2026-12-06T17:00:00Z"))),
        610
    );
    assert_eq!(
        new.overlap(t("2026-12-06T08:00:00Z"), Some(t("2026-12-06T09:00:00Z"))),
        0
    );
    // The first hour is the current one: covered up to now, 600 s of it.
    let current = window(now, Some((t("2026-12-06T16:00:00Z"), 600))).expect("window");
    assert_eq!(current.start, t("2026-12-06T16:32:10Z"));
    // An agent that started within the last two minutes has no window yet.
    assert_eq!(window(now, Some((t("2026-12-06T16:00:00Z"), 60))), None);
}

#[test]
fn the_score_is_availability_times_gpu_health_rounded_down() {
    let day = 86_400;
    let f = |covered, gpus, failed| Figures {
        window_seconds: day,
        covered_seconds: covered,
        gpu_count: gpus,
        failed_gpu_seconds: failed,
    };
    assert_eq!(score_bp(f(day, 8, 0)), Some(10_000));
    // 23 h of 24 covered: 0.958333… → 9583.
    assert_eq!(score_bp(f(day - 3600, 8, 0)), Some(9583));
    // One of 8 GPUs failed for half the day: health 15/16 = 0.9375.
    assert_eq!(score_bp(f(day, 8, day / 2)), Some(9375));
    assert_eq!(score_bp(f(day - 3600, 8, day / 2)), Some(8984));
    // What no window can hold is bounded by it.
    assert_eq!(score_bp(f(2 * day, 8, -5)), Some(10_000));
    assert_eq!(score_bp(f(day, 1, 3 * day)), Some(0));
    assert_eq!(score_bp(f(day, 0, 0)), Some(10_000));
    assert_eq!(score_bp(Figures::default()), None);
}

#[test]
fn offers_weigh_nodes_by_their_gpus() {
    assert_eq!(weighted_bp([(10_000, 8), (9_000, 2)]), Some(9_800));
    assert_eq!(weighted_bp([(9_999, 1), (9_998, 2)]), Some(9_998));
    assert_eq!(weighted_bp([(5_000, 0)]), None);
    assert_eq!(weighted_bp([]), None);
}

#[test]
fn gaps_are_the_hours_not_fully_covered_newest_first() {
    let w = Window {
        start: t("2026-12-06T10:30:00Z"),
        end: t("2026-12-06T13:20:00Z"),
    };
    let covered = BTreeMap::from([
        (t("2026-12-06T10:00:00Z"), 1800),
        // 11:00 has no row: the agent was down the whole hour.
        (t("2026-12-06T12:00:00Z"), 3000),
        // The current hour counts beyond the window's end: bounded by it.
        (t("2026-12-06T13:00:00Z"), 1500),
    ]);
    let found = gaps(w, &covered, 10);
    let want = [
        ("2026-12-06T12:00:00Z", 600),
        ("2026-12-06T11:00:00Z", 3600),
    ];
    assert_eq!(found.len(), want.len());
    for (gap, (hour, missing)) in found.iter().zip(want) {
        assert_eq!(gap.hour_start, t(hour));
        assert_eq!(gap.missing_seconds, missing);
    }
    assert_eq!(gaps(w, &covered, 1).len(), 1);
}
