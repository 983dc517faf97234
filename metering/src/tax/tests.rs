use super::*;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

fn seller(country: &str) -> Seller {
    Seller {
        legal_name: "Nordic GPU Oy".into(),
        country: country.into(),
        ..Default::default()
    }
}

fn buyer(country: &str, vat_id: Option<&str>) -> Buyer {
    Buyer {
        legal_name: "Acme".into(),
        address_lines: vec!["Street 1".into()],
        postal_code: "1".into(),
        city: "City".into(),
        country: country.into(),
        vat_id: vat_id.map(Into::into),
        vat_id_status: None,
        po_number: None,
        billing_email: None,
    }
}

fn rates() -> Vec<TaxRate> {
    let rate = |j: &str, p: &str, from: &str, until: Option<&str>| TaxRate {
        jurisdiction: j.into(),
        percent: d(p),
        valid_from: t(from),
        valid_until: until.map(t),
    };
    vec![
        rate("DE", "19", "2021-01-01T00:00:00Z", None),
        rate(
            "FI",
            "24",
            "2013-01-01T00:00:00Z",
            Some("2024-09-01T00:00:00Z"),
        ),
        rate("FI", "25.5", "2024-09-01T00:00:00Z", None),
        rate("FR", "20", "2014-01-01T00:00:00Z", None),
        rate("US", "0", "2000-01-01T00:00:00Z", None),
    ]
}

fn treatment_of(seller_country: &str, b: Option<Buyer>, at: &str) -> Treatment {
    determine(&seller(seller_country), b.as_ref(), t(at), &rates())
        .expect("determined")
        .expect("taxed")
}

#[test]
fn a_domestic_customer_pays_the_sellers_rate_whether_business_or_consumer() {
    for vat in [Some("FI01099602"), None] {
        let tr = treatment_of("FI", Some(buyer("FI", vat)), "2026-12-01T00:00:00Z");
        assert_eq!(tr.category, TaxCategory::Standard);
        assert_eq!((tr.jurisdiction.as_str(), tr.percent), ("FI", d("25.5")));
        assert_eq!(tr.note, None);
    }
}

#[test]
fn the_rate_is_the_one_in_force_at_the_tax_point() {
    let before = treatment_of("FI", None, "2024-08-31T23:59:59Z");
    let after = treatment_of("FI", None, "2024-09-01T00:00:00Z");
    assert_eq!((before.percent, after.percent), (d("24"), d("25.5")));
}

#[test]
fn an_eu_business_abroad_is_reverse_charged_with_the_legal_note() {
    let tr = treatment_of(
        "FI",
        Some(buyer("DE", Some("DE136695976"))),
        "2026-12-01T00:00:00Z",
    );
    assert_eq!(tr.category, TaxCategory::ReverseCharge);
    assert_eq!(tr.percent, Decimal::ZERO);
    assert!(
        tr.note
            .as_deref()
            .is_some_and(|n| n.contains("Article 196"))
    );
}

#[test]
fn an_eu_consumer_abroad_pays_the_rate_of_their_own_country() {
    let tr = treatment_of("FI", Some(buyer("FR", None)), "2026-12-01T00:00:00Z");
    assert_eq!(tr.category, TaxCategory::Standard);
    assert_eq!((tr.jurisdiction.as_str(), tr.percent), ("FR", d("20")));
    assert!(
        tr.note
            .as_deref()
            .is_some_and(|n| n.contains("One-Stop Shop"))
    );
}

#[test]
fn a_customer_outside_the_eu_is_an_export() {
    for vat in [Some("12-3456789"), None] {
        let tr = treatment_of("DE", Some(buyer("US", vat)), "2026-12-01T00:00:00Z");
        assert_eq!(tr.category, TaxCategory::Export);
        assert_eq!(tr.percent, Decimal::ZERO);
        assert!(
            tr.note
                .as_deref()
                .is_some_and(|n| n.contains("outside the EU"))
        );
    }
    let from_us = treatment_of("US", Some(buyer("DE", None)), "2026-12-01T00:00:00Z");
    assert_eq!(from_us.category, TaxCategory::Export);
}

#[test]
fn a_missing_rate_is_an_error_naming_the_jurisdiction() {
    let err = determine(
        &seller("FI"),
        Some(&buyer("AT", None)),
        t("2026-12-01T00:00:00Z"),
        &rates(),
    )
    .expect_err("no AT rate");
    assert!(err.to_string().contains("AT"));
    let none = determine(&seller(""), None, t("2026-12-01T00:00:00Z"), &rates());
    assert_eq!(none, Ok(None));
}

#[test]
fn tax_is_summed_per_rate_and_rounded_once_half_away_from_zero() {
    let standard = Treatment {
        category: TaxCategory::Standard,
        jurisdiction: "DE".into(),
        percent: d("19"),
        note: None,
    };
    let reduced = Treatment {
        percent: d("7"),
        ..standard.clone()
    };
    // 0.05 × 19 % = 0.0095 each; three lines: 0.15 × 19 % = 0.0285 → 0.03.
    let lines = [
        (d("0.05"), &standard),
        (d("0.05"), &standard),
        (d("10.50"), &reduced),
        (d("0.05"), &standard),
    ];
    let summary = summarise(lines, 2);
    assert_eq!(summary.len(), 2);
    assert_eq!((summary[0].taxable, summary[0].tax), (d("0.15"), d("0.03")));
    // 10.50 × 7 % = 0.735: a midpoint, away from zero.
    assert_eq!(
        (summary[1].taxable, summary[1].tax),
        (d("10.50"), d("0.74"))
    );
    assert_eq!(tax_on(d("-10.50"), d("7"), 2), d("-0.74"));
    assert_eq!(tax_on(d("1"), d("19"), 0), d("0"));
}
