//! Golden invoices: hand-computed scenarios in `tests/golden/*.json` (rating input →
//! expected lines and totals), each explained in its `why`. A scenario fails with the
//! lines it produced, so a changed rule shows exactly what it changed.

use std::path::Path;

use neocloud_metering::rating::period::{PeriodInput, rate_period};
use rust_decimal::Decimal;
use serde::Deserialize;

#[derive(Deserialize)]
struct Scenario {
    name: String,
    why: String,
    input: PeriodInput,
    expected: Expected,
}

#[derive(Deserialize)]
struct Expected {
    lines: Vec<ExpectedLine>,
    subtotal: String,
    credits: String,
    total: String,
}

#[derive(Deserialize)]
struct ExpectedLine {
    kind: String,
    quantity: Decimal,
    unit_price: Decimal,
    amount: String,
    description_contains: Option<String>,
    /// The line's unit (`node-hour`, `MIG slice 1g.10gb-hour`), where the scenario is
    /// about units.
    unit: Option<String>,
}

#[test]
fn every_golden_invoice_rates_as_computed_by_hand() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("golden directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "golden scenarios missing in {dir:?}");
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        let scenario: Scenario =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let rated = rate_period(&scenario.input).expect("rates");
        let got: Vec<String> = rated
            .lines
            .iter()
            .map(|l| {
                format!(
                    "{} {} {} × {} = {} ({})",
                    l.kind, l.quantity, l.unit, l.unit_price, l.amount, l.description
                )
            })
            .collect();
        let mut problems = Vec::new();
        if rated.lines.len() != scenario.expected.lines.len() {
            problems.push(format!(
                "{} lines, expected {}",
                rated.lines.len(),
                scenario.expected.lines.len()
            ));
        }
        for (i, (line, want)) in rated.lines.iter().zip(&scenario.expected.lines).enumerate() {
            let description_ok = want
                .description_contains
                .as_deref()
                .is_none_or(|d| line.description.contains(d));
            let unit_ok = want.unit.as_deref().is_none_or(|u| line.unit == u);
            if line.kind.as_str() != want.kind
                || !unit_ok
                || line.quantity != want.quantity
                || line.unit_price != want.unit_price
                || line.amount.to_string() != want.amount
                || !description_ok
            {
                problems.push(format!(
                    "line {i}: expected {} {} {:?} × {} = {} ({:?})",
                    want.kind,
                    want.quantity,
                    want.unit,
                    want.unit_price,
                    want.amount,
                    want.description_contains
                ));
            }
        }
        for (what, got, want) in [
            ("subtotal", rated.subtotal, &scenario.expected.subtotal),
            ("credits", rated.credits, &scenario.expected.credits),
            ("total", rated.total, &scenario.expected.total),
        ] {
            if got.to_string() != *want {
                problems.push(format!("{what} {got}, expected {want}"));
            }
        }
        let sum: Decimal = rated.lines.iter().map(|l| l.amount).sum();
        if sum != rated.total {
            problems.push(format!(
                "total {} is not the sum of lines {sum}",
                rated.total
            ));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{} ({}):\n  {}\n  got:\n    {}",
                scenario.name,
                scenario.why,
                problems.join("\n  "),
                got.join("\n    ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
