import { useEffect, useRef, useState } from 'preact/hooks';
import type { AddExchangeRateInput } from '../gql/schema';
import { dateTime } from '../lib/format';
import { useMutation } from '../lib/hooks';
import { Button } from '../ui/Button';
import { type ControlProps, Field, unclaimed } from '../ui/Field';
import { ErrorNotice, Notice } from '../ui/Notice';
import { isCurrencyCode, localUtc, pairLabel, type RateNeeded, rateProblem, utcInstantOf } from './exchangeRates';
import { AddExchangeRate } from './operations';

interface Draft {
  from: string;
  to: string;
  rate: string;
  /** A `datetime-local` value, read as UTC. */
  effectiveFrom: string;
  source: string;
}

type Problems = Partial<Record<keyof Draft, string>>;

/** The names of the fields the server's INVALID_INPUT may point at. */
const FIELDS = ['from', 'to', 'rate', 'effectiveFrom', 'source'];
const MAX_SOURCE = 200;
const CODES_LIST = 'exchange-rate-codes';

function start(needed: RateNeeded | null): Draft {
  return { from: needed?.from ?? '', to: needed?.to ?? '', rate: '', effectiveFrom: localUtc(needed?.at ?? ''), source: '' };
}

function check(d: Draft): Problems {
  const found: Problems = {};
  const code = 'A three-letter ISO 4217 code, such as USD.';
  if (!isCurrencyCode(d.from)) found.from = code;
  if (!isCurrencyCode(d.to)) found.to = code;
  else if (d.to.trim().toUpperCase() === d.from.trim().toUpperCase()) found.to = 'Another currency than From.';
  const rate = rateProblem(d.rate);
  if (rate) found.rate = rate;
  if (!utcInstantOf(d.effectiveFrom)) found.effectiveFrom = 'Choose the date and time (UTC) it is in force from.';
  if (d.source.trim().length > MAX_SOURCE) found.source = `At most ${MAX_SOURCE} characters.`;
  return found;
}

interface ExchangeRateFormProps {
  /** The pair (and instant) to start from: a held statement's. */
  needed: RateNeeded | null;
  /** Codes to suggest (the rates' and the providers' currencies). */
  codes: readonly string[];
  onAdded: () => void;
}

/**
 * Adds a rate of a pair from an instant (UTC). Rates are only ever added: a later one of
 * the pair takes over from its start. Started from a held statement's pair, the focus
 * goes to the rate.
 */
export function ExchangeRateForm({ needed, codes, onAdded }: ExchangeRateFormProps) {
  const [draft, setDraft] = useState<Draft>(() => start(needed));
  const [problems, setProblems] = useState<Problems>({});
  const [done, setDone] = useState<string | null>(null);
  const add = useMutation(AddExchangeRate);
  const form = useRef<HTMLFormElement>(null);
  // After a check or an answer that found problems, the first field marked takes the focus.
  useEffect(() => {
    if (Object.keys(problems).length > 0 || add.error?.code === 'INVALID_INPUT') form.current?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [problems, add.error]);
  // Started from a pair (a held statement's "Fill in"), the rate is what is left to type. After
  // a navigation the page's heading takes the focus next, as on every page.
  useEffect(() => {
    if (needed?.from && needed.to) form.current?.querySelector<HTMLElement>('[name="rate"]')?.focus();
  }, []);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const submit = async (e: Event) => {
    e.preventDefault();
    setDone(null);
    add.reset();
    const found = check(draft);
    setProblems(found);
    if (Object.keys(found).length > 0) return;
    const input: AddExchangeRateInput = {
      from: draft.from.trim().toUpperCase(),
      to: draft.to.trim().toUpperCase(),
      rate: draft.rate.trim(),
      effectiveFrom: utcInstantOf(draft.effectiveFrom) ?? '',
      source: draft.source.trim(),
    };
    const r = await add.run({ input });
    if (!r) return;
    const x = r.addExchangeRate;
    setDone(`Added ${pairLabel(x.from, x.to)} at ${x.rate}, in force from ${dateTime(x.effectiveFrom)}. A statement held for it closes on the next sweep.`);
    setDraft(start(null));
    onAdded();
  };
  const message = (name: keyof Draft) => problems[name] ?? null;
  const codeInput = (key: 'from' | 'to') => (p: ControlProps) => (
    <input
      {...p}
      type="text"
      autocomplete="off"
      autocapitalize="characters"
      spellcheck={false}
      maxLength={3}
      list={CODES_LIST}
      value={draft[key]}
      onInput={(e) => set(key, e.currentTarget.value.toUpperCase())}
    />
  );
  const from = draft.from.trim().toUpperCase() || 'From';
  const to = draft.to.trim().toUpperCase() || 'To';
  return (
    <form ref={form} class="card inline-grid" onSubmit={submit} noValidate aria-label="Add a rate">
      <datalist id={CODES_LIST}>
        {codes.map((c) => (
          <option key={c} value={c} />
        ))}
      </datalist>
      <Field label="From" name="from" error={add.error} message={message('from')} hint="The invoice's currency, e.g. USD.">
        {codeInput('from')}
      </Field>
      <Field label="To" name="to" error={add.error} message={message('to')} hint="The provider's currency, e.g. EUR.">
        {codeInput('to')}
      </Field>
      <Field label="Rate" name="rate" error={add.error} message={message('rate')} hint={`Units of ${to} per 1 ${from}, e.g. 0.9215.`}>
        {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={draft.rate} onInput={(e) => set('rate', e.currentTarget.value)} />}
      </Field>
      <Field label="In force from (UTC)" name="effectiveFrom" error={add.error} message={message('effectiveFrom')} hint="Until the pair's next rate; past instants too.">
        {(p) => <input {...p} type="datetime-local" value={draft.effectiveFrom} onInput={(e) => set('effectiveFrom', e.currentTarget.value)} />}
      </Field>
      <Field label="Source (optional)" name="source" error={add.error} message={message('source')} hint="e.g. ECB reference rate 2026-11-30.">
        {(p) => <input {...p} type="text" autocomplete="off" maxLength={MAX_SOURCE} value={draft.source} onInput={(e) => set('source', e.currentTarget.value)} />}
      </Field>
      <div class="inline-grid-actions">
        <Button type="submit" variant="primary" pending={add.pending}>
          Add rate
        </Button>
      </div>
      <div class="inline-grid-wide">
        <ErrorNotice error={unclaimed(add.error, FIELDS)} />
        {done && <Notice tone="success">{done}</Notice>}
      </div>
    </form>
  );
}
