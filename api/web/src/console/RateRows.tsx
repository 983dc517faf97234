import type { ComponentChildren } from 'preact';
import { useId, useRef, useState } from 'preact/hooks';
import { type Metric, MetricValues, type TiersMode, TiersModeValues } from '../gql/schema';
import { type ApiError, isFieldError } from '../lib/api';
import { money } from '../lib/format';
import { Button } from '../ui/Button';
import { Field } from '../ui/Field';
import { useFocusByName } from './focusByName';
import type { PlansResult } from './operations';
import { addTier, type DraftRate, editTier, emptyRate, isPrice, MAX_TIERS, metricsFor, perUnitRate, rateField, removeTier, shownFields, withMode } from './planDraft';
import { metricLabel, modeHint, modeLabel } from './rate';

type Sku = PlansResult['catalog']['skus'][number];
type Problems = Record<string, string>;

interface RateRowsProps {
  rates: readonly DraftRate[];
  currency: string;
  skuName: (id: string) => string;
  /** The last answer's error: shown at the rate and the price it names. */
  error: ApiError | null;
  /** The form's own checks, by field name (`rates[2].unitPrice`, `rates[0].tiers[1].upTo`). */
  problems: Problems;
  onChange: (rates: DraftRate[]) => void;
  onRemove: (index: number) => void;
}

/** The draft's rates: each one's mode and prices (tiers, package) editable, the rate removable. */
export function RateRows({ rates, currency, skuName, error, problems, onChange, onRemove }: RateRowsProps) {
  const root = useRef<HTMLDivElement>(null);
  const focus = useFocusByName(root);
  const at = error?.code === 'INVALID_INPUT' ? rateField(error.field) : null;
  const tableProblem = problems['rates'] ?? (at && (at[0] < 0 || at[0] >= rates.length) ? error?.message : null);
  const edit = (i: number, next: DraftRate) => onChange(rates.map((r, j) => (j === i ? next : r)));
  return (
    <div ref={root}>
      {tableProblem && <p class="field-error">{tableProblem}</p>}
      {rates.length === 0 ? (
        <p class="empty">No rates yet: add one below.</p>
      ) : (
        <div class="table-wrap">
          <table class="table rates-table">
            <caption class="sr-only">Rates of the new version</caption>
            <thead>
              <tr>
                <th scope="col">SKU</th>
                <th scope="col">Metric</th>
                <th scope="col">Pricing</th>
                <th scope="col">{`Price (${currency})`}</th>
                <th scope="col">{`Spot (${currency})`}</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rates.map((r, i) => (
                <RateRow
                  key={`${r.sku}-${r.metric}`}
                  rate={r}
                  index={i}
                  skuName={skuName(r.sku)}
                  currency={currency}
                  error={error}
                  own={at && at[0] === i && !shownFields(r).includes(at[1]) ? (error?.message ?? null) : null}
                  problems={problems}
                  focus={focus}
                  onEdit={(next) => edit(i, next)}
                  onRemove={() => onRemove(i)}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

interface RateRowProps {
  rate: DraftRate;
  index: number;
  skuName: string;
  currency: string;
  error: ApiError | null;
  /** The server's message about this rate when no input of the row shows it. */
  own: string | null;
  problems: Problems;
  focus: (name: string) => void;
  onEdit: (next: DraftRate) => void;
  onRemove: () => void;
}

/** One rate: its mode, the prices that mode takes, its spot price (per unit only). */
function RateRow({ rate: r, index, skuName, currency, error, own, problems, focus, onEdit, onRemove }: RateRowProps) {
  const what = `${skuName}, ${metricLabel(r.metric)}`;
  const name = (field: string) => `rates[${index}].${field}`;
  const cell = (field: string, label: ComponentChildren, value: string, onInput: (v: string) => void, visible = false) => (
    <CellInput label={label} visible={visible} name={name(field)} value={value} error={error} message={problems[name(field)]} onInput={onInput} />
  );
  return (
    <tr>
      <td>
        <div class="cell-stack">
          <strong>{skuName}</strong>
          {own && <span class="field-error">{own}</span>}
        </div>
      </td>
      <td>{metricLabel(r.metric)}</td>
      <td>
        <ModeSelect label={`Pricing of ${what}`} name={name('tiersMode')} value={r.tiersMode} onChange={(mode) => onEdit(withMode(r, mode))} />
      </td>
      <td>
        {r.tiersMode === 'PER_UNIT' && cell('unitPrice', `Unit price of ${what}`, r.unitPrice, (v) => onEdit({ ...r, unitPrice: v }))}
        {r.tiersMode === 'PACKAGE' && (
          <div class="cell-stack">
            {cell('packageSize', <Visible shown="Package size (units)" rest={` of ${what}`} />, r.packageSize, (v) => onEdit({ ...r, packageSize: v }), true)}
            {cell('packagePrice', <Visible shown={`Package price (${currency})`} rest={` of ${what}`} />, r.packagePrice, (v) => onEdit({ ...r, packagePrice: v }), true)}
          </div>
        )}
        {(r.tiersMode === 'GRADUATED' || r.tiersMode === 'VOLUME') && <TierTable rate={r} index={index} what={what} currency={currency} error={error} problems={problems} focus={focus} onEdit={onEdit} />}
      </td>
      <td>{r.tiersMode === 'PER_UNIT' ? cell('spotUnitPrice', `Spot price of ${what}`, r.spotUnitPrice, (v) => onEdit({ ...r, spotUnitPrice: v })) : <span class="muted small">Per unit only</span>}</td>
      <td>
        <Button small variant="ghost" onClick={onRemove} aria-label={`Remove the rate of ${what}`}>
          Remove
        </Button>
      </td>
    </tr>
  );
}

/** A label's visible words and, for screen readers only, the rest (which rate it is of). */
function Visible({ shown, rest }: { shown: string; rest: string }) {
  return (
    <>
      {shown}
      <span class="sr-only">{rest}</span>
    </>
  );
}

interface ModeSelectProps {
  label: string;
  name: string;
  value: TiersMode;
  onChange: (mode: TiersMode) => void;
}

/** A rate's mode, with a sentence on how it prices. */
function ModeSelect({ label, name, value, onChange }: ModeSelectProps) {
  const id = useId();
  return (
    <div class="cell-field">
      <label class="sr-only" for={id}>
        {label}
      </label>
      <select id={id} name={name} value={value} onChange={(e) => onChange(e.currentTarget.value as TiersMode)} aria-describedby={`${id}-hint`}>
        {TiersModeValues.map((m) => (
          <option key={m} value={m}>
            {modeLabel(m)}
          </option>
        ))}
      </select>
      <p class="field-hint" id={`${id}-hint`}>
        {modeHint(value)}
      </p>
    </div>
  );
}

interface TierTableProps {
  rate: DraftRate;
  index: number;
  what: string;
  currency: string;
  error: ApiError | null;
  problems: Problems;
  focus: (name: string) => void;
  onEdit: (next: DraftRate) => void;
}

/**
 * A GRADUATED or VOLUME rate's tiers: each one's bound (the last one's: no limit), unit
 * price and flat fee; tiers added at the end and removed (one is left at least).
 */
function TierTable({ rate: r, index, what, currency, error, problems, focus, onEdit }: TierTableProps) {
  const name = (field: string) => `rates[${index}].${field}`;
  const problem = problems[name('tiers')] ?? (isFieldError(error, name('tiers')) ? error?.message : null);
  const last = r.tiers.length - 1;
  // The tier that was last needs a bound now; after a removal, the tier in its place.
  const add = () => {
    onEdit(addTier(r));
    focus(name(last < 0 ? 'tiers[0].unitPrice' : `tiers[${last}].upTo`));
  };
  const remove = (j: number) => {
    onEdit(removeTier(r, j));
    focus(name(`tiers[${Math.min(j, last - 1)}].unitPrice`));
  };
  const cell = (j: number, field: 'upTo' | 'unitPrice' | 'flatFee', label: string) => (
    <CellInput
      label={`${label}, tier ${j + 1} of ${what}`}
      name={name(`tiers[${j}].${field}`)}
      value={r.tiers[j]?.[field] ?? ''}
      error={error}
      message={problems[name(`tiers[${j}].${field}`)]}
      onInput={(v) => onEdit(editTier(r, j, { [field]: v }))}
    />
  );
  return (
    <div class="cell-stack">
      {problem && <p class="field-error">{problem}</p>}
      <table class="table table-compact">
        <caption class="sr-only">{`Tiers of ${what} (${modeLabel(r.tiersMode).toLowerCase()})`}</caption>
        <thead>
          <tr>
            <th scope="col">Tier</th>
            <th scope="col">Up to (units)</th>
            <th scope="col">Unit price</th>
            <th scope="col">Flat fee</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {r.tiers.map((_, j) => (
            <tr key={j}>
              <td>{j + 1}</td>
              <td>{j === last ? <span class="muted">No limit</span> : cell(j, 'upTo', 'Up to')}</td>
              <td>{cell(j, 'unitPrice', `Unit price (${currency})`)}</td>
              <td>{cell(j, 'flatFee', `Flat fee (${currency}, optional)`)}</td>
              <td>
                {r.tiers.length > 1 && (
                  <Button small variant="ghost" onClick={() => remove(j)} aria-label={`Remove tier ${j + 1} of ${what}`}>
                    Remove
                  </Button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Button small onClick={add} disabled={r.tiers.length >= MAX_TIERS} aria-label={`Add tier to ${what}${r.tiers.length ? `, after tier ${r.tiers.length}` : ''}`}>
        Add tier
      </Button>
    </div>
  );
}

interface CellInputProps {
  label: ComponentChildren;
  /** Shown (else for screen readers only: the column says it). */
  visible?: boolean;
  name: string;
  value: string;
  error: ApiError | null;
  message: string | undefined;
  onInput: (value: string) => void;
}

/** A price in a table cell: its label, its error under it. */
function CellInput({ label, visible = false, name, value, error, message, onInput }: CellInputProps) {
  const id = useId();
  const problem = message ?? (isFieldError(error, name) ? error?.message : null);
  return (
    <div class={`cell-field${problem ? ' has-error' : ''}`}>
      <label class={visible ? 'small' : 'sr-only'} for={id}>
        {label}
      </label>
      <input
        id={id}
        name={name}
        type="text"
        inputMode="decimal"
        autocomplete="off"
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? `${id}-error` : undefined}
      />
      {problem && (
        <p class="field-error" id={`${id}-error`}>
          {problem}
        </p>
      )}
    </div>
  );
}

interface AddRateProps {
  /** The SKUs listed in the plan's currency. */
  skus: readonly Sku[];
  currency: string;
  rates: readonly DraftRate[];
  onAdd: (rate: DraftRate) => void;
}

/**
 * "Add rate": a SKU, a metric its form is rated by and a mode; per unit, its price and
 * optionally a spot price; other modes' tiers or package are filled in in the table.
 */
export function AddRate({ skus, currency, rates, onAdd }: AddRateProps) {
  const [skuId, setSkuId] = useState('');
  const [metric, setMetric] = useState<Metric>('ALLOCATED');
  const [mode, setMode] = useState<TiersMode>('PER_UNIT');
  const [unitPrice, setUnitPrice] = useState('');
  const [spot, setSpot] = useState('');
  const [problems, setProblems] = useState<Problems>({});
  const sku = skus.find((s) => s.id === skuId);
  const metrics = sku ? metricsFor(sku.form, MetricValues) : MetricValues.filter((m) => m !== 'METERED');
  const chooseSku = (id: string) => {
    setSkuId(id);
    const next = skus.find((s) => s.id === id);
    if (next && !metricsFor(next.form, MetricValues).includes(metric)) setMetric(metricsFor(next.form, MetricValues)[0] ?? 'ALLOCATED');
  };
  const perUnit = mode === 'PER_UNIT';
  const add = () => {
    const found: Problems = {};
    if (!sku) found['sku'] = 'Choose a SKU.';
    else if (rates.some((r) => r.sku === sku.id && r.metric === metric)) found['metric'] = 'The version rates this SKU by this metric already.';
    const price = unitPrice.trim();
    if (perUnit && !isPrice(price)) found['unitPrice'] = 'A price, 0 or more, such as 2.49.';
    const spotPrice = spot.trim();
    if (perUnit && spotPrice && !isPrice(spotPrice)) found['spotUnitPrice'] = 'A price, 0 or more, or empty for none.';
    setProblems(found);
    if (Object.keys(found).length > 0 || !sku) return;
    onAdd(perUnit ? perUnitRate(sku.id, metric, price, spotPrice) : emptyRate(sku.id, metric, mode));
    setSkuId('');
    setUnitPrice('');
    setSpot('');
  };
  // Enter in a field adds the rate (it does not submit the whole version).
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && e.target instanceof HTMLInputElement) {
      e.preventDefault();
      add();
    }
  };
  return (
    <fieldset class="add-rate" onKeyDown={onKeyDown}>
      <legend>Add a rate</legend>
      <div class="inline-grid">
        <Field label="SKU" name="sku" message={problems['sku']} hint={sku ? `List price ${money(sku.listPricePerHour, sku.currency)} per unit-hour.` : undefined}>
          {(p) => (
            <select {...p} value={skuId} onChange={(e) => chooseSku(e.currentTarget.value)}>
              <option value="">{skus.length ? 'Choose a SKU…' : `No SKU is listed in ${currency || 'this currency'}`}</option>
              {skus.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Metric" name="metric" message={problems['metric']}>
          {(p) => (
            <select {...p} value={metric} onChange={(e) => setMetric(e.currentTarget.value as Metric)}>
              {metrics.map((m) => (
                <option key={m} value={m}>
                  {metricLabel(m)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Pricing" name="tiersMode" hint={perUnit ? undefined : `${modeHint(mode)} ${mode === 'PACKAGE' ? 'Its size and price are' : 'Its tiers are'} filled in above once added.`}>
          {(p) => (
            <select {...p} value={mode} onChange={(e) => setMode(e.currentTarget.value as TiersMode)}>
              {TiersModeValues.map((m) => (
                <option key={m} value={m}>
                  {modeLabel(m)}
                </option>
              ))}
            </select>
          )}
        </Field>
        {perUnit && (
          <Field label={`Price per unit (${currency})`} name="unitPrice" message={problems['unitPrice']}>
            {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={unitPrice} onInput={(e) => setUnitPrice(e.currentTarget.value)} />}
          </Field>
        )}
        {perUnit && (
          <Field label={`Spot price (${currency}, optional)`} name="spotUnitPrice" message={problems['spotUnitPrice']}>
            {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={spot} onInput={(e) => setSpot(e.currentTarget.value)} />}
          </Field>
        )}
        <div class="inline-grid-actions">
          <Button onClick={add}>Add rate</Button>
        </div>
      </div>
    </fieldset>
  );
}
