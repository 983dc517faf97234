import { useId, useState } from 'preact/hooks';
import { type Metric, MetricValues } from '../gql/schema';
import { type ApiError, isFieldError } from '../lib/api';
import { compare, isDecimal } from '../lib/decimal';
import { enumLabel, money } from '../lib/format';
import { Button } from '../ui/Button';
import { Field } from '../ui/Field';
import type { PlansResult } from './operations';
import { type DraftRate, metricsFor, perUnitRate, rateField } from './planDraft';
import { metricLabel, type Rate, ratePrice } from './rate';

type Sku = PlansResult['catalog']['skus'][number];

interface RateRowsProps {
  rates: readonly DraftRate[];
  currency: string;
  skuName: (id: string) => string;
  /** The last answer's error: shown at the rate and the price it names. */
  error: ApiError | null;
  /** The form's own checks, by field name (`rates[2].unitPrice`). */
  problems: Record<string, string>;
  onChange: (rates: DraftRate[]) => void;
  onRemove: (index: number) => void;
}

/** The draft's rates: PER_UNIT prices editable and the rate removable; other modes read-only. */
export function RateRows({ rates, currency, skuName, error, problems, onChange, onRemove }: RateRowsProps) {
  const at = error?.code === 'INVALID_INPUT' ? rateField(error.field) : null;
  const tableProblem = problems['rates'] ?? (at && (at[0] < 0 || at[0] >= rates.length) ? error?.message : null);
  const edit = (i: number, change: Partial<DraftRate>) => onChange(rates.map((r, j) => (j === i ? { ...r, ...change } : r)));
  return (
    <>
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
                <th scope="col">{`Price per unit (${currency})`}</th>
                <th scope="col">{`Spot (${currency})`}</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rates.map((r, i) => {
                const what = `${skuName(r.sku)}, ${metricLabel(r.metric)}`;
                const own = at && at[0] === i && !(r.tiersMode === 'PER_UNIT' && (at[1] === 'unitPrice' || at[1] === 'spotUnitPrice')) ? error?.message : null;
                return (
                  <tr key={`${r.sku}-${r.metric}`}>
                    <td>
                      <div class="cell-stack">
                        <strong>{skuName(r.sku)}</strong>
                        {own && <span class="field-error">{own}</span>}
                      </div>
                    </td>
                    <td>{metricLabel(r.metric)}</td>
                    <td>{r.tiersMode === 'PER_UNIT' ? 'Per unit' : <span class="cell-stack">{enumLabel(r.tiersMode)}<span class="muted small">carried over</span></span>}</td>
                    {r.tiersMode === 'PER_UNIT' ? (
                      <>
                        <td>
                          <CellInput label={`Unit price of ${what}`} name={`rates[${i}].unitPrice`} value={r.unitPrice} error={error} message={problems[`rates[${i}].unitPrice`]} onInput={(v) => edit(i, { unitPrice: v })} />
                        </td>
                        <td>
                          <CellInput label={`Spot price of ${what}`} name={`rates[${i}].spotUnitPrice`} value={r.spotUnitPrice} error={error} message={problems[`rates[${i}].spotUnitPrice`]} onInput={(v) => edit(i, { spotUnitPrice: v })} />
                        </td>
                        <td>
                          <Button small variant="ghost" onClick={() => onRemove(i)} aria-label={`Remove the rate of ${what}`}>
                            Remove
                          </Button>
                        </td>
                      </>
                    ) : (
                      <>
                        <td>{ratePrice(asRate(r), currency)}</td>
                        <td>—</td>
                        <td />
                      </>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

function asRate(r: DraftRate): Rate {
  return { ...r, unitPrice: r.unitPrice || null, spotUnitPrice: r.spotUnitPrice || null };
}

interface CellInputProps {
  label: string;
  name: string;
  value: string;
  error: ApiError | null;
  message: string | undefined;
  onInput: (value: string) => void;
}

/** A price in a table cell: its label for screen readers only (the column says it), its error under it. */
function CellInput({ label, name, value, error, message, onInput }: CellInputProps) {
  const id = useId();
  const problem = message ?? (isFieldError(error, name) ? error?.message : null);
  return (
    <div class={`cell-field${problem ? ' has-error' : ''}`}>
      <label class="sr-only" for={id}>
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

/** "Add rate": a SKU, a metric its form is rated by, a price per unit and optionally a spot price. */
export function AddRate({ skus, currency, rates, onAdd }: AddRateProps) {
  const [skuId, setSkuId] = useState('');
  const [metric, setMetric] = useState<Metric>('ALLOCATED');
  const [unitPrice, setUnitPrice] = useState('');
  const [spot, setSpot] = useState('');
  const [problems, setProblems] = useState<Record<string, string>>({});
  const sku = skus.find((s) => s.id === skuId);
  const metrics = sku ? metricsFor(sku.form, MetricValues) : MetricValues.filter((m) => m !== 'METERED');
  const chooseSku = (id: string) => {
    setSkuId(id);
    const next = skus.find((s) => s.id === id);
    if (next && !metricsFor(next.form, MetricValues).includes(metric)) setMetric(metricsFor(next.form, MetricValues)[0] ?? 'ALLOCATED');
  };
  const add = () => {
    const found: Record<string, string> = {};
    if (!sku) found['sku'] = 'Choose a SKU.';
    else if (rates.some((r) => r.sku === sku.id && r.metric === metric)) found['metric'] = 'The version rates this SKU by this metric already.';
    const price = unitPrice.trim();
    if (!isDecimal(price) || compare(price, '0') < 0) found['unitPrice'] = 'A price, 0 or more, such as 2.49.';
    const spotPrice = spot.trim();
    if (spotPrice && (!isDecimal(spotPrice) || compare(spotPrice, '0') < 0)) found['spotUnitPrice'] = 'A price, 0 or more, or empty for none.';
    setProblems(found);
    if (Object.keys(found).length > 0 || !sku) return;
    onAdd(perUnitRate(sku.id, metric, price, spotPrice));
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
        <Field label={`Price per unit (${currency})`} name="unitPrice" message={problems['unitPrice']}>
          {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={unitPrice} onInput={(e) => setUnitPrice(e.currentTarget.value)} />}
        </Field>
        <Field label={`Spot price (${currency}, optional)`} name="spotUnitPrice" message={problems['spotUnitPrice']}>
          {(p) => <input {...p} type="text" inputMode="decimal" autocomplete="off" value={spot} onInput={(e) => setSpot(e.currentTarget.value)} />}
        </Field>
        <div class="inline-grid-actions">
          <Button onClick={add}>Add rate</Button>
        </div>
      </div>
    </fieldset>
  );
}
