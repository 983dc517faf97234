//! Reference rates from a feed in the European Central Bank's format: a
//! `<Cube time='YYYY-MM-DD'>` per day holding `<Cube currency='USD' rate='1.0845'/>` per
//! currency, units per euro. The daily feed (`eurofxref-daily.xml`) holds one day, the
//! 90-day history (`eurofxref-hist-90d.xml`) one per working day, which back-fills the days
//! a server was not reading. From each day's rates come every pair between the supported
//! currencies it names and the euro: the published rates, their inverses and the cross
//! rates through the euro, rounded half-even to the 10 decimals a stored rate may have,
//! each in force from the day's start (UTC).

use chrono::{DateTime, NaiveDate, Utc};
use neocloud_schema::money::Currency;
use rust_decimal::{Decimal, RoundingStrategy};

use super::store::NewRate;

/// Largest feed read.
pub const MAX_FEED_BYTES: usize = 1 << 20;
/// Digits a derived rate keeps.
const DIGITS: u32 = 10;
/// Most days one feed may hold (a year of working days, with room).
pub const MAX_DAYS: usize = 400;

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

/// The values of attribute `name` with where they stand (single or double quotes).
fn attributes<'a>(xml: &'a str, name: &str) -> Vec<(usize, &'a str)> {
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
    found
}

/// Reads every day of a feed, oldest first. Refused whole: no day or more than
/// [`MAX_DAYS`], a day twice, a date that is not one, a rate outside a day, a currency
/// or rate that is malformed, a rate not above 0 or above 1,000,000, or a day without a
/// supported currency. Currencies neocloud does not bill in are skipped.
pub fn parse(xml: &str) -> Result<Vec<Day>, FeedError> {
    if xml.len() > MAX_FEED_BYTES {
        return Err(refused("the feed is larger than 1 MiB"));
    }
    let times = attributes(xml, "time");
    if times.is_empty() || times.len() > MAX_DAYS {
        return Err(refused(format!(
            "expected 1 to {MAX_DAYS} days (`time`) in the feed"
        )));
    }
    let currencies = attributes(xml, "currency");
    let rates = attributes(xml, "rate");
    if currencies.len() != rates.len() {
        return Err(refused("a currency without a rate, or a rate without one"));
    }
    if currencies.first().is_some_and(|(at, _)| *at < times[0].0) {
        return Err(refused("a rate outside a day"));
    }
    let mut days = Vec::with_capacity(times.len());
    for (i, (start, date)) in times.iter().enumerate() {
        let end = times.get(i + 1).map_or(xml.len(), |(at, _)| *at);
        let inside = |(at, _): &&(usize, &str)| (*start..end).contains(at);
        let named: Vec<&str> = currencies.iter().filter(inside).map(|c| c.1).collect();
        let valued: Vec<&str> = rates.iter().filter(inside).map(|r| r.1).collect();
        days.push(day(date, &named, &valued)?);
    }
    days.sort_by_key(|d| d.date);
    if days.windows(2).any(|w| w[0].date == w[1].date) {
        return Err(refused("a day is in the feed twice"));
    }
    Ok(days)
}

/// One day's rates from its currencies and their rates, in order.
fn day(date: &str, currencies: &[&str], rates: &[&str]) -> Result<Day, FeedError> {
    let date = NaiveDate::parse_from_str(date, "%Y-%m-%d")
        .map_err(|_| refused(format!("`{date}` is not a date")))?;
    if currencies.len() != rates.len() {
        return Err(refused(format!(
            "{date}: a currency without a rate, or a rate without one"
        )));
    }
    let mut per_euro = Vec::new();
    for (&code, &rate) in currencies.iter().zip(rates) {
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
        return Err(refused(format!("{date}: no rate of a supported currency")));
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
        let [day] = &parse(FEED).expect("parses")[..] else {
            panic!("one day")
        };
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

    /// The feed with a second day before the first (the 90-day history is newest first).
    fn two_days(date: &str, usd: &str) -> String {
        FEED.replace(
            "\t\t</Cube>\n\t</Cube>",
            &format!(
                "\t\t</Cube>\n\t\t<Cube time='{date}'><Cube currency='USD' rate='{usd}'/></Cube>\n\t</Cube>"
            ),
        )
    }

    #[test]
    fn a_history_gives_its_days_oldest_first() {
        let days = parse(&two_days("2026-12-03", "1.0801")).expect("parses");
        let dates: Vec<String> = days.iter().map(|d| d.date.to_string()).collect();
        assert_eq!(dates, ["2026-12-03", "2026-12-04"]);
        assert_eq!(days[0].per_euro, vec![("USD".to_owned(), dec("1.0801"))]);
        assert_eq!(days[1].per_euro.len(), 3, "{days:?}");
        assert_eq!(days[0].pairs("r").len(), 2, "EUR→USD and USD→EUR");
    }

    #[test]
    fn a_malformed_feed_is_refused_whole() {
        let many: String = (0..=MAX_DAYS)
            .map(|i| format!("<Cube time='2026-01-01'><Cube currency='USD' rate='1.{i}'/></Cube>"))
            .collect();
        for bad in [
            "",
            "<html>maintenance</html>",
            &FEED.replace("1.0845", "-1"),
            &FEED.replace("1.0845", "1,0845"),
            &FEED.replace("0.8421", "2000000"),
            &FEED.replace("2026-12-04", "2026-13-04"),
            &FEED.replace("'USD'", "'usd'"),
            &FEED.replace(" rate='162.35'", ""),
            &two_days("2026-12-04", "1.0801"),
            &two_days("2026-12-03", "0"),
            &two_days("2026-12-03", "1.08").replace("USD' rate='1.08'", "HUF' rate='400'"),
            &format!("<Cube currency='USD' rate='1.1'/>{FEED}"),
            &many,
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
