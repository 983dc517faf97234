use proptest::prelude::*;

use super::*;

fn d(s: &str) -> Decimal {
    s.parse().expect("decimal")
}

fn standard(percent: &str) -> Option<(TaxCategory, Decimal)> {
    Some((TaxCategory::Standard, d(percent)))
}

fn line(position: u32, amount: &str, tax: Option<(TaxCategory, Decimal)>) -> Creditable {
    Creditable {
        line: Uuid::from_u128(u128::from(position)),
        position,
        description: format!("line {position}"),
        amount: d(amount),
        credited: Decimal::ZERO,
        tax,
    }
}

/// Records a note's lines as credited.
fn apply(lines: &mut [Creditable], note: &Allocation) {
    for credited in &note.lines {
        let line = lines
            .iter_mut()
            .find(|l| l.line == credited.line)
            .expect("line");
        line.credited += credited.amount;
    }
}

/// 202.48 at 25.5 % beside a 0.01 discount at 7 %: the invoice is 254.10, so a note of
/// 202.48 (254.11 with tax) is refused although its rate has that much left.
#[test]
fn a_discount_at_another_rate_caps_what_is_left_of_the_invoice() {
    let mut lines = [
        line(1, "202.48", standard("25.5")),
        line(2, "-0.01", standard("7")),
    ];
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    let refused = allocate(&invoice, &Request::Amount(d("202.48")));
    assert!(
        matches!(refused, Err(Refusal::Invalid { field: "amount", ref message }) if message.contains("254.10")),
        "{refused:?}"
    );
    let note = allocate(&invoice, &Request::Amount(d("202.47"))).expect("within the invoice");
    assert_eq!(note.total, d("254.10"));
    apply(&mut lines, &note);
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    assert_eq!(
        allocate(&invoice, &Request::Full),
        Err(Refusal::NothingLeft)
    );
}

#[test]
fn a_full_note_reverses_the_invoice_discounts_included() {
    let lines = [
        line(1, "100.00", standard("19")),
        line(2, "-10.00", standard("19")),
    ];
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    let note = allocate(&invoice, &Request::Full).expect("full");
    assert_eq!(
        (note.net, note.tax, note.total),
        (d("90.00"), d("17.10"), d("107.10"))
    );
    assert_eq!(note.lines.len(), 2);
}

#[test]
fn a_line_is_credited_at_most_what_is_left_of_it_and_of_its_rate() {
    let mut lines = vec![
        line(1, "100.00", standard("19")),
        line(2, "-10.00", standard("19")),
        line(3, "50.00", standard("19")),
    ];
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    let first = allocate(&invoice, &Request::Lines(vec![(1, Some(d("60")))])).expect("part");
    apply(&mut lines, &first);
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    let refused = allocate(&invoice, &Request::Lines(vec![(1, Some(d("40.01")))]));
    assert!(
        matches!(refused, Err(Refusal::Invalid { field: "lines", .. })),
        "{refused:?}"
    );
    // The discount line and a credit line cannot be named.
    assert!(allocate(&invoice, &Request::Lines(vec![(2, None)])).is_err());
    // What is left of lines 1 and 3 (40 + 50) is more than is left at the rate (140 − 60).
    let refused = allocate(&invoice, &Request::Lines(vec![(1, None), (3, None)]));
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("at most 80.00")),
        "{refused:?}"
    );
}

#[test]
fn an_amount_goes_over_the_lines_in_order_and_keeps_their_rates() {
    let lines = [
        line(1, "10.00", standard("19")),
        line(2, "5.00", standard("7")),
    ];
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    let note = allocate(&invoice, &Request::Amount(d("12.00"))).expect("amount");
    let rates: Vec<(Decimal, Decimal)> = note.rates.iter().map(|r| (r.net, r.tax_amount)).collect();
    // 10.00 at 19 % = 1.90; 2.00 at 7 % = 0.14.
    assert_eq!(rates, [(d("10.00"), d("1.90")), (d("2.00"), d("0.14"))]);
    assert!(allocate(&invoice, &Request::Amount(d("15.01"))).is_err());
    assert!(allocate(&invoice, &Request::Amount(d("0.001"))).is_err());
    assert!(allocate(&invoice, &Request::Amount(d("-1"))).is_err());
}

#[test]
fn taxes_round_cumulatively_so_notes_never_exceed_the_invoice_tax() {
    // 0.30 at 5 % = 0.015 → 0.02 on the invoice; three notes of 0.10 (0.005 each, which
    // rounded alone would be 0.01 each, 0.03 in all) take 0.01, 0.00 and 0.01.
    let mut lines = vec![line(1, "0.30", standard("5"))];
    let mut taxes = Vec::new();
    for _ in 0..3 {
        let invoice = Invoice {
            lines: &lines,
            minor_digits: 2,
        };
        let note = allocate(&invoice, &Request::Amount(d("0.10"))).expect("note");
        taxes.push(note.tax);
        apply(&mut lines, &note);
    }
    assert_eq!(taxes, [d("0.01"), d("0.00"), d("0.01")]);
    let invoice = Invoice {
        lines: &lines,
        minor_digits: 2,
    };
    assert_eq!(
        allocate(&invoice, &Request::Full),
        Err(Refusal::NothingLeft)
    );
}

/// The invoice's tax at a rate, by the rule in docs/invoicing.md rather than the code's
/// `tax_on`: to the cent, half away from zero.
fn cents_half_away(exact: Decimal) -> Decimal {
    let magnitude = (exact.abs() * Decimal::ONE_HUNDRED + Decimal::new(5, 1)).floor();
    let cents = if exact < Decimal::ZERO {
        -magnitude
    } else {
        magnitude
    };
    cents / Decimal::ONE_HUNDRED
}

fn arb_invoice() -> impl Strategy<Value = Vec<Creditable>> {
    let rates = prop_oneof![
        Just(vec![None]),
        Just(vec![standard("19")]),
        Just(vec![standard("19"), standard("16")]),
        Just(vec![Some((TaxCategory::ReverseCharge, Decimal::ZERO))]),
        Just(vec![standard("25.5"), standard("7")]),
    ];
    (
        rates,
        proptest::collection::vec((-2_000i64..50_000, 0usize..2), 1..8),
    )
        .prop_map(|(rates, raw)| {
            raw.into_iter()
                .enumerate()
                .map(|(i, (cents, rate))| Creditable {
                    line: Uuid::from_u128(i as u128 + 1),
                    position: i as u32 + 1,
                    description: String::new(),
                    amount: Decimal::new(cents, 2),
                    credited: Decimal::ZERO,
                    tax: rates[rate % rates.len()],
                })
                .collect()
        })
}

fn arb_request() -> impl Strategy<Value = Request> {
    prop_oneof![
        (1i64..30_000).prop_map(|c| Request::Amount(Decimal::new(c, 2))),
        proptest::collection::vec((1u32..9, proptest::option::of(1i64..30_000)), 1..3).prop_map(
            |ls| {
                Request::Lines(
                    ls.into_iter()
                        .map(|(p, a)| (p, a.map(|c| Decimal::new(c, 2))))
                        .collect(),
                )
            }
        ),
        Just(Request::Full),
    ]
}

proptest! {
    #[test]
    fn an_invoices_credit_notes_never_exceed_it(
        mut lines in arb_invoice(),
        requests in proptest::collection::vec(arb_request(), 0..6),
    ) {
        let original = lines.clone();
        let mut keys: Vec<Option<(TaxCategory, Decimal)>> = Vec::new();
        for l in &original {
            if !keys.contains(&l.tax) {
                keys.push(l.tax);
            }
        }
        let taxable = |key| original.iter().filter(|l| l.tax == key).map(|l| l.amount).sum::<Decimal>();
        let invoice_tax = |key: Option<(TaxCategory, Decimal)>| key.map_or(Decimal::ZERO, |(_, p)| cents_half_away(taxable(key) * p / Decimal::ONE_HUNDRED));
        let mut noted_net = std::collections::HashMap::new();
        let mut noted_tax = std::collections::HashMap::new();
        for request in requests.iter().chain([&Request::Full]) {
            let invoice = Invoice { lines: &lines, minor_digits: 2 };
            let Ok(note) = allocate(&invoice, request) else { continue };
            prop_assert!(note.total > Decimal::ZERO);
            for rate in &note.rates {
                *noted_net.entry(rate.tax).or_insert(Decimal::ZERO) += rate.net;
                *noted_tax.entry(rate.tax).or_insert(Decimal::ZERO) += rate.tax_amount;
            }
            apply(&mut lines, &note);
            for key in &keys {
                let net = noted_net.get(key).copied().unwrap_or_default();
                let tax = noted_tax.get(key).copied().unwrap_or_default();
                prop_assert!(net <= taxable(*key).max(Decimal::ZERO), "{key:?}: {net} > {}", taxable(*key));
                prop_assert!(tax.abs() <= invoice_tax(*key).abs(), "{key:?}: tax {tax} > {}", invoice_tax(*key));
            }
            for l in lines.iter().filter(|l| l.amount > Decimal::ZERO) {
                prop_assert!(l.credited <= l.amount);
            }
        }
        // After the final full note the invoice is credited exactly: every rate with
        // something to credit, or, where a discount at another rate already offset what
        // was left, its whole gross.
        let gross: Decimal = keys.iter().map(|k| taxable(*k) + invoice_tax(*k)).sum();
        let credited: Decimal = noted_net.values().chain(noted_tax.values()).copied().sum();
        prop_assert!(credited <= gross.max(Decimal::ZERO), "{credited} > {gross}");
        let exact = keys.iter().all(|key| {
            taxable(*key) <= Decimal::ZERO
                || (noted_net.get(key).copied().unwrap_or_default() == taxable(*key)
                    && noted_tax.get(key).copied().unwrap_or_default() == invoice_tax(*key))
        });
        prop_assert!(exact || credited == gross.max(Decimal::ZERO), "{credited} of {gross}");
    }
}
