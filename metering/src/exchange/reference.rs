//! Reference rates from a feed in the European Central Bank's format
//! (`eurofxref-daily.xml`: one `<Cube time='YYYY-MM-DD'>` holding
//! `<Cube currency='USD' rate='1.0845'/>` per currency, units per euro). From one day's
//! rates come every pair between the supported currencies it names and the euro: the
//! published rates, their inverses and the cross rates through the euro, rounded half-even
//! to the 10 decimals a stored rate may have, each in force from the day's start (UTC).

use chrono::{DateTime, NaiveDate, Utc};
use neocloud_schema::money::Currency;
use rust_decimal::{Decimal, RoundingStrategy};

use super::store::NewRate;

/// Largest feed read.
pub const MAX_FEED_BYTES: usize = 1 << 20;
/// Digits a derived rate keeps.
const DIGITS: u32 = 10;

/// One day's reference rates: units of each currency per euro.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Day {
    pub date: NaiveDate,
    /// Supported currencies only, sorted, without the euro.
    pub per_euro: Vec<(String, Decimal)>,
}

/// Why a feed was refused (nothing of it is used).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reference rates: {0}")]
pub struct FeedError(pub String);

fn refused(message: impl Into<String>) -> FeedError {
    FeedError(message.into())
}

/// The values of attribute `name` in document order (single or double quotes).
fn attributes<'a>(xml: &'a str, name: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    for quote in ['\'', '"'] {
        let marker = format!(" {name}={quote}");
        let mut rest = xml;
        while let Some(at) = rest.find(&marker) {
            let value = &rest[at + marker.len()..];
            let Some(end) = value.find(quote) else { break };
            found.push((xml.len() - rest.len() + at, &value[..end]));
            rest = &value[end..];
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, value)| value).collect()
}

/// Reads a day of rates. Refused: not exactly one day, a date that is not one, a
/// currency or rate that is malformed, a rate not above 0 or above 1,000,000, or no
/// supported currency at all. Currencies neocloud does not bill in are skipped.
pub fn parse(xml: &str) -> Result<Day, FeedError> {
    if xml.len() > MAX_FEED_BYTES {
        return Err(refused("the feed is larger than 1 MiB"));
    }
    let [date] = attributes(xml, "time")[..] else {
        return Err(refused("expected exactly one day (`time`) in the feed"));
    };
    let date = NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map_err(|_| refused(format!("`{date}` is not a date")))?;
    let currencies = attributes(xml, "currency");
    let rates = attributes(xml, "rate");
    if currencies.len() != rates.len() {
        return Err(refused("a currency without a rate, or a rate without one"));
    }
    let mut per_euro = Vec::new();
    for (code, rate) in currencies.into_iter().zip(rates) {
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(refused(format!("`{code}` is not a currency code")));
        }
        let rate: Decimal = rate
            .parse()
            .map_err(|_| refused(format!("{code}: `{rate}` is not a decimal")))?;
        if rate <= Decimal::ZERO || rate > Decimal::from(1_000_000) {
            return Err(refused(format!("{code}: {rate} is not a plausible rate")));
        }
        if code != "EUR" && code.parse::<Currency>().is_ok() {
            per_euro.push((code.to_owned(), rate));
        }
    }
    per_euro.sort();
    per_euro.dedup_by(|a, b| a.0 == b.0);
    if per_euro.is_empty() {
        return Err(refused("no rate of a supported currency"));
    }
    Ok(Day { date, per_euro })
}

impl Day {
    /// When the day's rates take effect: its start, UTC.
    pub fn effective_from(&self) -> DateTime<Utc> {
        self.date.and_time(chrono::NaiveTime::MIN).and_utc()
    }

    /// Every pair: units of `to` per unit of `from`, `source` naming where it came from.
    pub fn pairs(&self, source: &str) -> Vec<NewRate> {
        let mut all = vec![("EUR".to_owned(), Decimal::ONE)];
        all.extend(self.per_euro.iter().cloned());
        let mut pairs = Vec::new();
        for (from, from_per_euro) in &all {
            for (to, to_per_euro) in &all {
                if from == to {
                    continue;
                }
                let rate = (to_per_euro / from_per_euro)
                    .round_dp_with_strategy(DIGITS, RoundingStrategy::MidpointNearestEven)
                    .normalize();
                pairs.push(NewRate {
                    from: from.clone(),
                    to: to.clone(),
                    rate,
                    effective_from: self.effective_from(),
                    source: format!("{source} {}", self.date),
                });
            }
        }
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Decimal {
        text.parse().expect("decimal")
    }

    const FEED: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>
<gesmes:Envelope xmlns:gesmes=\"http://www.gesmes.org/xml/2002-08-01\" xmlns=\"http://www.ecb.int/vocabulary/2002-08-01/eurofxref\">
\t<gesmes:subject>Reference rates</gesmes:subject>
\t<Cube>
\t\t<Cube time='2026-12-04'>
\t\t\t<Cube currency='USD' rate='1.0845'/>
\t\t\t<Cube currency='JPY' rate='162.35'/>
\t\t\t<Cube currency='HUF' rate='402.10'/>
\t\t\t<Cube currency='GBP' rate='0.8421'/>
\t\t</Cube>
\t</Cube>
</gesmes:Envelope>";

    #[test]
    fn a_day_gives_every_pair_of_its_supported_currencies() {
        let day = parse(FEED).expect("parses");
        assert_eq!(day.date, NaiveDate::from_ymd_opt(2026, 12, 4).unwrap());
        assert_eq!(day.per_euro.len(), 3, "HUF is not billed in: {day:?}");
        let pairs = day.pairs("ECB reference rate");
        assert_eq!(pairs.len(), 4 * 3);
        let rate = |from: &str, to: &str| {
            pairs
                .iter()
                .find(|p| p.from == from && p.to == to)
                .map(|p| p.rate)
                .expect("pair")
        };
        assert_eq!(rate("EUR", "USD"), dec("1.0845"));
        // 1 / 1.0845 = 0.92208390963577…, and GBP per USD = 0.8421 / 1.0845.
        assert_eq!(rate("USD", "EUR"), dec("0.9220839096"));
        assert_eq!(rate("USD", "GBP"), dec("0.7764868603"));
        assert_eq!(rate("JPY", "EUR"), dec("0.0061595319"));
        assert!(
            pairs
                .iter()
                .all(|p| p.source == "ECB reference rate 2026-12-04")
        );
        assert!(
            pairs
                .iter()
                .all(|p| p.effective_from.to_rfc3339() == "2026-12-04T00:00:00+00:00")
        );
    }

    #[test]
    fn a_malformed_feed_is_refused_whole() {
        let twice = FEED.replace(
            "</Cube>\n\t</Cube>",
            "</Cube><Cube time='2026-12-03'></Cube>\n\t</Cube>",
        );
        for bad in [
            "",
            "<html>maintenance</html>",
            &FEED.replace("1.0845", "-1"),
            &FEED.replace("1.0845", "1,0845"),
            &FEED.replace("0.8421", "2000000"),
            &FEED.replace("2026-12-04", "2026-13-04"),
            &FEED.replace("'USD'", "'usd'"),
            &FEED.replace(" rate='162.35'", ""),
            &twice,
        ] {
            assert!(parse(bad).is_err(), "accepted: {bad}");
        }
        let only_unsupported = FEED
            .replace("'USD'", "'HUF'")
            .replace("'JPY'", "'PLN'")
            .replace("'GBP'", "'CZK'");
        assert!(parse(&only_unsupported).is_err());
    }

    #[test]
    fn double_quotes_read_as_single_ones() {
        let day = parse(&FEED.replace('\'', "\"")).expect("parses");
        assert_eq!(day, parse(FEED).expect("parses"));
    }
}
